"""The ``mnemo`` command: a thin layer over :class:`mnemo.Mnemo`.

Every command parses its options, calls one ``Mnemo`` method and renders the result, as text
for people or as JSON (``--json``) for scripts and agents. ``OPERATIONS`` maps each command to
the API operation it runs (DESIGN.md's naming note: ``save`` = remember, ``search`` = recall).
"""


from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .._settings import config as _config
from ..errors import ImportFormatError, MnemoError
from . import background
from .base import OPERATIONS, CLIState, _render, command, main_group

__all__ = ["OPERATIONS", "CLIState", "command", "main", "main_group"]

# ---------------------------------------------------------------- commands

@command("init")
@click.option("--encrypt", is_flag=True, help="Create the store encrypted (a key file is made if no key is set).")
def init_cmd(state: CLIState, encrypt: bool) -> None:
    """Create the store (idempotent) and report where it is."""
    existed = _store_exists(state)
    if encrypt:
        state.config.values["encrypt"] = True
    if encrypt and existed:
        from .._stores.sqlite_file import is_encrypted

        if not is_encrypted(state.config.db):
            raise click.UsageError("the store already exists unencrypted; run `mnemo encrypt` to encrypt it")
    with state.open(create=True) as m:
        info = m.stats()
    info["created"] = not existed
    state.emit(info, lambda: _render.init(info))


def _store_exists(state: CLIState) -> bool:
    """Whether the configured store is already there: its file, or a database with mnemo's schema."""
    from .._stores import is_url
    from ..errors import StoreMissingError

    if not is_url(state.config.db):
        return os.path.exists(state.config.db)
    try:
        with state.open(create=False):
            return True
    except StoreMissingError:
        return False


def _refuse_read_only(c: Any) -> None:
    """With the ``read_only`` setting a conversion is refused before anything (a key file) is made."""
    if c["read_only"]:
        from .._stores.sqlite_file import read_only_error

        raise read_only_error(Path(c.db), "the read_only setting is on")


@command("encrypt")
def encrypt_cmd(state: CLIState) -> None:
    """Encrypt an existing store and its migration backups in place (new files, verified, then
    swapped in; a run killed at any point is finished or undone by the next command)."""
    from .._settings import keys as _keys
    from .._stores.sqlite_file import is_encrypted
    from .._stores.sqlite_rekey import convert

    c = state.config
    if not os.path.exists(c.db):
        raise click.UsageError(f"no store at {c.db}; `mnemo init --encrypt` creates an encrypted one")
    _refuse_read_only(c)
    if is_encrypted(c.db):
        raise click.UsageError(f"{c.db} is already encrypted (`mnemo rekey` changes the key)")
    key = _keys.resolve(c.db, c.key_file)
    if key is None:
        key = _keys.create_key_file(c.key_file)
        _render.err.print(f"created the key file {key.source} (0600): back it up — without it the store cannot be read")
    report = convert(c.db, old_key=None, new_key=key.value, read_only=c["read_only"])
    report["key_source"] = key.source
    state.emit(report, lambda: _render.line(f"encrypted {c.db} ({report['memories']} memories"
                                            + (f", {report['backups']} backups" if report["backups"] else "") + f"); key from {key.source}"))


def _encrypted_store(state: CLIState, hint: str = "") -> Any:
    """The settings of an existing encrypted store (decrypt and rekey need one), or a usage error."""
    from .._stores.sqlite_file import is_encrypted

    c = state.config
    if not os.path.exists(c.db) or not is_encrypted(c.db):
        raise click.UsageError(f"{c.db} is not an encrypted store{hint}")
    _refuse_read_only(c)
    return c


@command("decrypt")
def decrypt_cmd(state: CLIState) -> None:
    """Decrypt an encrypted store and its migration backups in place (new files, verified, then
    swapped in; a run killed at any point is finished or undone by the next command)."""
    from .._stores.sqlite_rekey import convert

    c = _encrypted_store(state)
    report = convert(c.db, old_key=state.key(), new_key=None, read_only=c["read_only"])
    state.emit(report, lambda: _render.line(f"decrypted {c.db} ({report['memories']} memories"
                                            + (f", {report['backups']} backups" if report["backups"] else "") + "); the key is no longer needed"))


@command("rekey")
def rekey_cmd(state: CLIState) -> None:
    """Change the key of an encrypted store and its migration backups (the new key goes to the
    key file, or comes from MNEMO_NEW_KEY). Until the key file is replaced, the new key waits in
    key.pending beside it; a rekey killed midway is finished or undone by the next command."""
    from .._settings import keys as _keys
    from .._stores.sqlite_convert import opens_with
    from .._stores.sqlite_rekey import convert

    c = _encrypted_store(state, " (`mnemo encrypt` encrypts it)")
    old = _keys.resolve(c.db, c.key_file)  # finishes a rekey that was killed after the store's swap
    if old is None:
        raise click.UsageError("no key found for this store (MNEMO_KEY, keyring or key file)")
    if old.warning:
        _render.err.print(f"warning: {old.warning}")
    new_value = os.environ.get("MNEMO_NEW_KEY") or None
    if new_value is None and old.source != str(c.key_file):
        raise click.UsageError(f"the key comes from {old.source}; set the new one in MNEMO_NEW_KEY")
    new_value = new_value or _keys.new_key()
    if new_value == old.value:
        raise click.UsageError("MNEMO_NEW_KEY is the store's current key; give a different one")
    from_file = old.source == str(c.key_file)
    held = None
    if from_file:
        # the new key is on disk (and locked) before the store depends on it
        held = _keys.write_pending(c.db, c.key_file, new_value)
    try:
        report = convert(c.db, old_key=old.value, new_key=new_value, read_only=c["read_only"])
        if from_file:
            _keys.commit_pending(c.key_file, new_value)
    except BaseException:
        if from_file and opens_with(c.db, old.value):  # the store kept the old key: the pending one is void
            _keys.pending_path(c.key_file).unlink(missing_ok=True)
        raise
    finally:
        if held is not None:
            os.close(held)
    state.emit(report, lambda: _render.line(f"re-keyed {c.db} ({report['memories']} memories"
                                            + (f", {report['backups']} backups" if report["backups"] else "") + ")"
                                            + ("" if from_file else "; use MNEMO_NEW_KEY as MNEMO_KEY from now on")))


@command("save", scope_option=True)
@click.argument("text", nargs=-1, required=True)
@click.option("--type", "mtype", default="note", show_default=True, help="Memory type (user_preference, decision, …).")
@click.option("--scope", help="Scope: global or project:<name> (default: MNEMO_SCOPE / config / global).")
@click.option("--tags", help="Comma-separated tags.")
@click.option("--importance", type=float, default=0.5, show_default=True, help="0..1; how much it matters.")
@click.option("--confidence", type=float, default=1.0, show_default=True, help="0..1; how sure it is.")
@click.option("--source", default="manual", show_default=True, help="Where it came from.")
@click.option("--created-at", help="When it happened (ISO-8601; naive = local time).")
@click.option("--expires", help="Stop recalling it after 30d / 12w / a date, until confirmed (mnemo review).")
@click.option("--pin", is_flag=True, help="Never decay or archive it.")
@click.option("--no-dedup", is_flag=True, help="Store it even if it repeats, relates to or replaces a memory.")
def save_cmd(state: CLIState, text: tuple[str, ...], mtype: str, scope: str | None, tags: str | None, importance: float,
             confidence: float, source: str, created_at: str | None, expires: str | None, pin: bool, no_dedup: bool) -> None:
    """Remember TEXT (use - to read it from standard input). A repeat is merged into the memory it
    repeats, a similar memory is linked as related, and one that replaces a statement supersedes it."""
    content: Any = " ".join(text)
    if content == "-":
        content = sys.stdin.buffer.read()
    long = len(content) > LONG_SAVE
    with state.open(create=True) as m, _render.working(f"saving {len(content):,} characters…", enabled=long and not state.as_json):
        mem, action = m.remember_many([dict(content=content, type=mtype, scope=scope, tags=tags, importance=importance,
                                            confidence=confidence, source=source, created_at=created_at, expires=expires,
                                            pinned=pin)], cause="save", dedup=not no_dedup)[0]
        links = m.related(mem.id) if action in ("related", "superseded") else []
    state.emit({"action": action, "memory": mem.to_dict(), "links": links}, lambda: _render.saved(mem, action, links))
    _warn_if_expired(mem)
    if long and not state.as_json:
        _render.err.print(f"note: a long text ({len(mem.content):,} characters) is one memory: its vector reads its start. "
                          "`mnemo ingest FILE` cuts a document into chunks that can each be found")


#: a text longer than this is saved with a spinner and a hint that documents belong in ingest
LONG_SAVE = 8000


def _warn_if_expired(mem: Any) -> None:
    """An expiry already past is allowed (a memory that is only for the record), but never silent:
    the memory will not be recalled until it is confirmed."""
    from .._base.models import format_time, utcnow

    if mem.expires_at and mem.expires_at <= format_time(utcnow()):
        _render.err.print(f"note: {mem.id} expired at {mem.expires_at}, which is past: it is not recalled until "
                          f"confirmed (mnemo confirm {mem.id} --expires 30d), and `mnemo review` lists it")


@command("search")
@click.argument("query", required=False)
@click.option("--batch", "batch", type=click.Path(dir_okay=False, allow_dash=True), help='JSONL file of queries (- for stdin), one {"query": …} per line, optionally with "qid", "scope", "k" (or "top_k"), "now"; prints one {"qid", "query", "results"} line each.')
@click.option("-k", "--top-k", type=int, help="How many results (default 5).")
@click.option("--min-similarity", type=float, help="Drop hits whose embedding cosine is below this (model-specific).")
@click.option("--min-score", type=float, help="Relevance floor on the final score (default from config).")
@click.option("--type", "types", multiple=True, help="Only these types (repeat or comma-separate).")
@click.option("--scope", help="Scope to search besides global; 'all' searches every scope.")
@click.option("--tags", help="Only memories with all these tags (comma-separated).")
@click.option("--since", help="Only memories created at or after this time.")
@click.option("--until", help="Only memories created before this time.")
@click.option("--now", help="Treat this time as now (recency and 'last week').")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "fts"]), default="hybrid", show_default=True, help="Retrieval channels.")
@click.option("--explain", is_flag=True, help="Show how each score was computed.")
@click.option("--no-touch", is_flag=True, help="Do not count this search as an access.")
@click.option("--include-superseded", is_flag=True, help="Also return memories that newer ones replaced.")
@click.option("--include-archived", is_flag=True, help="Also return archived memories.")
@click.option("--include-expired", is_flag=True, help="Also return memories past their expiry (see mnemo review).")
@click.option("--expand", is_flag=True, help="Follow each hit with its related memories.")
def search_cmd(state: CLIState, query: str | None, batch: str | None, top_k: int | None, min_similarity: float | None,
               min_score: float | None, types: tuple[str, ...], scope: str | None, tags: str | None, since: str | None,
               until: str | None, now: str | None, mode: str, explain: bool, no_touch: bool, include_superseded: bool,
               include_archived: bool, include_expired: bool, expand: bool) -> None:
    """Recall the memories relevant to QUERY (hybrid full-text + semantic search)."""
    type_list = [t for chunk in types for t in chunk.split(",") if t.strip()] or None
    k = top_k if top_k is not None else state.config["top_k"]
    opts = dict(min_similarity=min_similarity, min_score=min_score, types=type_list, tags=tags, since=since, until=until, mode=mode,
                include_superseded=include_superseded, include_archived=include_archived, include_expired=include_expired, expand=expand)
    if batch:
        items = _read_batch(batch)
        with state.open() as m:
            for row in m.recall_batch(items, top_k=k, scope=scope, now=now, explain=explain, **opts):
                click.echo(json.dumps(row, ensure_ascii=False))
        return
    if not query:
        raise click.UsageError("give a QUERY or --batch FILE")
    with state.open() as m:
        hits = m.recall(query, top_k=k, scope=scope, now=now, explain=explain, touch=not no_touch, **opts)
    state.emit({"query": query, "results": [h.to_dict() for h in hits]}, lambda: _render.hits(hits, explain))


def _read_batch(path: str) -> list[dict[str, Any]]:
    from .._base.models import load_json
    from ..errors import InvalidInputError

    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"batch file {path} is not UTF-8 text") from None
    items, problems = [], []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = load_json(line)
        except json.JSONDecodeError as exc:
            problems.append((n, f"invalid JSON ({exc.msg})"))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            problems.append((n, "needs a non-empty \"query\""))
            continue
        items.append(item)
    if problems:
        raise InvalidInputError("batch file: " + "; ".join(f"line {n}: {msg}" for n, msg in problems[:5]))
    return items


@command("recent")
@click.option("--days", type=float, default=7, show_default=True)
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--scope", help="Scope besides global; 'all' for every scope.")
@click.option("--wide", is_flag=True, help="Whole ids and every column; the content wrapped instead of cut.")
def recent_cmd(state: CLIState, days: float, limit: int, scope: str | None, wide: bool) -> None:
    """Memories saved in the last few days."""
    with state.open() as m:
        shown = scope or m.scope
        mems = m.recent(days=days, limit=limit, scope=scope)
    state.emit([x.to_dict() for x in mems], lambda: (_render.scope_line(shown), _render.memories(mems, wide=wide)))


@command("list")
@click.option("--scope", help="Scope besides global; 'all' for every scope (default: the current scope).")
@click.option("--type", "types", multiple=True, help="Only these types (repeat or comma-separate).")
@click.option("--tags", help="Only memories with all these tags.")
@click.option("--since")
@click.option("--until")
@click.option("--status", "statuses", multiple=True, help="Statuses to list: active, superseded, archived, deleted (repeat or comma-separate; default active).")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0)
@click.option("--wide", is_flag=True, help="Whole ids and every column; the content wrapped instead of cut.")
def list_cmd(state: CLIState, scope: str | None, types: tuple[str, ...], tags: str | None, since: str | None, until: str | None,
             statuses: tuple[str, ...], limit: int, offset: int, wide: bool) -> None:
    """List memories, newest first, with filters."""
    type_list = [t for chunk in types for t in chunk.split(",") if t.strip()] or None
    status_list = tuple(s.strip() for chunk in statuses for s in chunk.split(",") if s.strip()) or ("active",)
    with state.open() as m:
        shown = scope or m.scope
        mems = m.list(scope=shown, types=type_list, tags=tags, since=since, until=until, statuses=status_list, limit=limit, offset=offset)
    state.emit([x.to_dict() for x in mems], lambda: (_render.scope_line(shown), _render.memories(mems, wide=wide)))


@command("show")
@click.argument("memory_id")
def show_cmd(state: CLIState, memory_id: str) -> None:
    """Show one memory with its history (MEMORY_ID may be a unique prefix of 8+ characters, as for forget, restore, edit…)."""
    with state.open() as m:
        mem = m.get(memory_id)
        events = m.history(mem.id)
        links = m.related(mem.id)
    state.emit({"memory": mem.to_dict(), "history": events, "links": links}, lambda: _render.show(mem, events, links))


@command("history")
@click.argument("memory_id")
def history_cmd(state: CLIState, memory_id: str) -> None:
    """Every recorded event of a memory."""
    with state.open() as m:
        events = m.history(memory_id)
    state.emit(events, lambda: _render.events(events))


def _step(state: CLIState, step: Callable[[Any], Any], said: str) -> None:
    """Run a one-memory lifecycle step (``forget``, ``restore``) and say what happened."""
    with state.open() as m:
        mem = step(m)
    state.emit(mem.to_dict(), lambda: _render.line(said.format(id=mem.id)))


@command("forget")
@click.argument("memory_id")
def forget_cmd(state: CLIState, memory_id: str) -> None:
    """Soft-delete a memory (mnemo restore brings it back)."""
    _step(state, lambda m: m.forget(memory_id), "forgot {id} (restore with: mnemo restore {id})")


@command("restore")
@click.argument("memory_id")
def restore_cmd(state: CLIState, memory_id: str) -> None:
    """Undo a memory's last lifecycle step: un-forget, un-archive, un-supersede, un-merge or un-edit."""
    _step(state, lambda m: m.restore(memory_id), "restored {id}")


@command("purge")
@click.argument("memory_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Erase every memory, the history, the index and mnemo's backups of this store.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (scripts).")
def purge_cmd(state: CLIState, memory_ids: tuple[str, ...], everything: bool, yes: bool) -> None:
    """Permanently delete memories (the only hard delete; `forget` is the undoable one)."""
    if not memory_ids and not everything:
        raise click.UsageError("name memory ids to purge, or --all")
    if memory_ids and everything:
        raise click.UsageError("give memory ids or --all, not both")
    what = "EVERY memory in " + state.config.db if everything else f"{len(memory_ids)} memories"
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError(f"purging {what} cannot be undone; add --yes to confirm")
        click.confirm(f"Permanently delete {what}? This cannot be undone", abort=True, err=True)
    with state.open() as m:
        report = m.purge(memory_ids, everything=everything)

    def show() -> None:
        extra = [f"{len(report['summaries_purged'])} summaries that quoted them"] if report.get("summaries_purged") else []
        extra += [f"{len(report['removed_files'])} backup files"] if report["removed_files"] else []
        _render.line(f"purged {report['purged']} memories" + (" and " + ", ".join(extra) if extra else ""))
        if report.get("warning"):
            _render.err.print(f"warning: {report['warning']}")

    state.emit(report, show)


@command("edit")
@click.argument("memory_id")
@click.option("--content", help="New text (re-embedded; the old text stays in the history).")
@click.option("--type", "mtype", help="New type.")
@click.option("--tags", help="New comma-separated tags (replaces them).")
@click.option("--importance", type=float)
@click.option("--confidence", type=float)
@click.option("--scope", help="Move it to another scope.")
@click.option("--expires", help="New expiry (30d, a date), or '' to clear it.")
@click.option("--pin/--unpin", default=None, help="Exempt it from decay and archiving, or not.")
def edit_cmd(state: CLIState, memory_id: str, content: str | None, mtype: str | None, tags: str | None, importance: float | None,
             confidence: float | None, scope: str | None, expires: str | None, pin: bool | None) -> None:
    """Change a memory; `mnemo restore ID` undoes the edit."""
    with state.open() as m:
        mem = m.edit(memory_id, content=content, type=mtype, tags=tags, importance=importance, confidence=confidence,
                     scope=scope, expires=expires, pinned=pin)
    state.emit(mem.to_dict(), lambda: _render.line(f"updated {mem.id} (undo with: mnemo restore {mem.id})"))
    _warn_if_expired(mem)


@command("review")
@click.option("--limit", type=int, default=100, show_default=True)
@click.option("--scope", help="Scope besides global; 'all' for every scope (default: the current scope).")
@click.option("--wide", is_flag=True, help="Whole ids and every column; the content wrapped instead of cut.")
def review_cmd(state: CLIState, limit: int, scope: str | None, wide: bool) -> None:
    """What needs a person: memories past their expiry (confirm them: mnemo confirm ID) and possible
    conflicts the write rules could not settle (mnemo resolve NEW_ID --supersede | --keep-both)."""
    with state.open() as m:
        shown = scope or m.scope
        mems = m.review(limit=limit, scope=scope)
        conflicts = m.conflicts(scope=scope, limit=limit)
    data = {"scope": shown, "expired": [x.to_dict() for x in mems],
            "possible_conflicts": [{"new": c["new"].to_dict(), "old": c["old"].to_dict(), "why": c["why"], "at": c["at"]} for c in conflicts]}
    state.emit(data, lambda: _render.review(shown, mems, conflicts, wide=wide))


@command("resolve")
@click.argument("memory_id")
@click.option("--supersede/--keep-both", required=True, help="The newer memory replaces the older one, or both stay.")
def resolve_cmd(state: CLIState, memory_id: str, supersede: bool) -> None:
    """Settle a possible conflict listed by `mnemo review` (ID: the newer memory)."""
    with state.open() as m:
        mem = m.resolve(memory_id, supersede=supersede)
    state.emit(mem.to_dict(), lambda: _render.line(
        f"{mem.id} now replaces the older memory (undo: mnemo restore on the older one)" if supersede else f"kept both; {mem.id} is settled"))


@command("scope")
def scope_cmd(state: CLIState) -> None:
    """The scope commands use in this folder, and why (flag, MNEMO_SCOPE, .mnemo.toml, git project, config)."""
    c = state.config
    data = {"scope": c["scope"], "why": c.origins["scope"], "folder": os.getcwd()}
    state.emit(data, lambda: _render.line(f"{data['scope']}  ({data['why']})"))


@command("confirm")
@click.argument("memory_id")
@click.option("--expires", help="The next expiry (30d, a date); default: the same span again, or none.")
def confirm_cmd(state: CLIState, memory_id: str, expires: str | None) -> None:
    """Reconfirm an expired memory so it is recalled again."""
    with state.open() as m:
        mem = m.confirm(memory_id, expires=expires)
    state.emit(mem.to_dict(), lambda: _render.line(f"confirmed {mem.id}" + (f"; next review {mem.expires_at}" if mem.expires_at else "")))
    _warn_if_expired(mem)


@command("gc")
@click.option("--apply", "apply_", is_flag=True, help="Do it (the default is a dry run that only shows what would change).")
@click.option("--archive-days", type=float, help="Archive memories unused this long (default: the archive_days setting).")
def gc_cmd(state: CLIState, apply_: bool, archive_days: float | None) -> None:
    """Archive memories nobody has used for a long time (importance ≥ 0.8 and pinned ones are exempt)."""
    days = archive_days if archive_days is not None else state.config["archive_days"]
    with state.open() as m:
        report = m.gc(apply=apply_, archive_days=days)
    state.emit(report, lambda: _render.gc(report))


@command("consolidate", scope_option=False)
@click.option("--scope", help="Scope to consolidate (default: the current scope).")
@click.option("--since", help="Only memories created at or after this time.")
@click.option("--apply", "apply_", is_flag=True, help="Do it (the default is a dry run).")
@click.option("--min-group", type=int, default=3, show_default=True, help="Smallest group worth a summary.")
def consolidate_cmd(state: CLIState, scope: str | None, since: str | None, apply_: bool, min_group: int) -> None:
    """Merge fragments about one topic into a summary memory; the fragments are archived, not deleted."""
    with state.open() as m:
        report = m.consolidate(scope=scope, since=since, apply=apply_, min_group=min_group)
    state.emit(report, lambda: _render.consolidation(report))


@command("stats")
def stats_cmd(state: CLIState) -> None:
    """Totals, last 7 days, by type and scope, store size, model."""
    with state.open() as m:
        info = m.stats()
    state.emit(info, lambda: _render.stats(info))


@command("export")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "jsonl"]), default="json", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="File to write (default: standard output).")
@click.option("--include-deleted", is_flag=True, help="Also export soft-deleted memories.")
@click.option("--full", is_flag=True, help="A backup: every memory of every status with its history and links "
              "(JSON or JSON Lines; `mnemo import` restores it as it was).")
def export_cmd(state: CLIState, fmt: str, output: str | None, include_deleted: bool, full: bool) -> None:
    """Export every memory as Markdown, JSON or JSON Lines. With --full, a backup that import
    restores as it was (every status, history and links)."""
    warning = _export_exposure(output)
    if warning:
        _render.err.print(f"warning: {warning}")
    with state.open() as m:
        if output is None:
            m.export(fmt, sys.stdout, include_deleted=include_deleted, full=full)
            return
        n = m.export(fmt, output, include_deleted=include_deleted, full=full)
    state.emit({"exported": n, "output": output, "format": fmt, **({"full": True} if full else {})},
               lambda: _render.line(f"exported {n} memories{' with their history and links' if full else ''} to {output}"))


def _export_exposure(output: str | None) -> str | None:
    """Why an export may be readable by others, if it may: exports hold the memories in clear."""
    import stat

    try:
        if output is None:
            st = os.fstat(sys.stdout.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IROTH:
                return "the export goes to a file other users can read (chmod 600 it)"
            return None
        folder = Path(output).expanduser().resolve().parent
        if folder.stat().st_mode & stat.S_IWOTH:
            return f"exporting into {folder}, which every user can write to; the file itself is created 0600"
    except (OSError, ValueError):
        return None
    return None


@command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--skip-invalid", is_flag=True, help="Import the valid records and report the malformed ones (default: import nothing if any is malformed).")
@click.option("--dedup", is_flag=True, help="Merge repeats, link related memories and supersede replaced ones, as save does (default: keep every record).")
@background.vectors_option
def import_cmd(state: CLIState, file: str, skip_invalid: bool, dedup: bool, vectors: str) -> None:
    """Import memories from JSON or JSON Lines (only "content" is required; idempotent). A full
    export (mnemo export --full) is restored as it was: statuses, times, history and links."""
    how = "now" if dedup and vectors == "auto" else background.mode(state, vectors)  # the write rules need every vector
    with state.open(create=True) as m, _render.progress("importing", enabled=not state.as_json) as tick:
        report = m.import_(file, skip_invalid=skip_invalid, progress=tick, dedup=dedup, vectors=how)
    background.hand_over(state, report)
    state.emit(report, lambda: _render.imported(report, background.pending_line(report)))


@command("reindex")
@click.option("--no-fts", is_flag=True, help="Only rebuild vectors.")
def reindex_cmd(state: CLIState, no_fts: bool) -> None:
    """Rebuild the derived index (full-text rows and vectors) for the configured model; resumable."""
    with state.open() as m, _render.progress("embedding", enabled=not state.as_json) as tick:
        report = m.reindex(fts=not no_fts, progress=tick)
    state.emit(report, lambda: _render.line(
        f"reindexed with {report['model']}: {report['fts_rows']} full-text rows, {report['embedded']} memories embedded"
        + (f", {report['dropped_vectors']} vectors of other models dropped" if report["dropped_vectors"] else "")))


@command("doctor")
@click.option("--salvage", "salvage_to", metavar="NEW.db", type=click.Path(dir_okay=False),
              help="Rescue what can still be read from a damaged store into the new store NEW.db (the damaged file "
                   "is left as it is), then rebuild its index.")
def doctor_cmd(state: CLIState, salvage_to: str | None) -> None:
    """Check the store, the model and the index; say what is wrong and how to fix it. With
    --salvage NEW.db, rescue what can be read of a damaged store into a new one."""
    if salvage_to is not None:
        _salvage(state, salvage_to)
        return
    with state.open() as m:
        checks = m.doctor()
    state.emit({"path": state.config.db, "checks": checks}, lambda: _render.doctor(checks))
    if any(c["status"] == "fail" for c in checks):
        sys.exit(1)


@command("redact")
@click.argument("text", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, default=True, help="Only show what would be masked (the default: this command never stores anything).")
def redact_cmd(state: CLIState, text: tuple[str, ...], dry_run: bool) -> None:
    """Show what redaction masks in TEXT (- reads stdin): secrets, keys, phone/ID/card numbers, e-mail, <private> spans."""
    from .._core.mnemo import Mnemo

    content = " ".join(text)
    if content == "-":
        content = sys.stdin.read()
    red = Mnemo.redact_with(state.config.redactor(), content)
    findings = [{"kind": f.kind, "start": f.start, "end": f.end, "found": content[f.start:f.end], "placeholder": f.placeholder} for f in red.findings]
    state.emit({"text": red.text, "kinds": red.kinds, "findings": findings}, lambda: _render.redaction(red.text, findings))


@command("config")
def config_cmd(state: CLIState) -> None:
    """Show the effective settings and where each came from."""
    c = state.config
    rows = [{"name": s.name, "value": c.db if s.name == "db" else c[s.name], "origin": c.origins[s.name], "env": s.env, "help": s.help}
            for s in _config.SETTINGS]
    state.emit({"config_file": str(_config.config_path()), "home": str(_config.home()), "settings": rows}, lambda: _render.config(rows))


@command("demo")
@click.option("--keep", is_flag=True, help="Keep the demo store and print where it is.")
def demo_cmd(state: CLIState, keep: bool) -> None:
    """A guided tour on a throwaway store: save, search (across languages), explain, stats, export."""
    from .demo import run_demo

    run_demo(model=state.config["model"], keep=keep, as_json=state.as_json)


# Feature command modules register themselves on import (capture, ingest, assistants).
from . import ask, assist, capture, changes, ingest, sync, team  # noqa: E402,F401

# ---------------------------------------------------------------- entry point

#: options every command takes, which may also stand before the command (``mnemo --db PATH search …``,
#: as ``git -C`` or ``docker -H``); the value-taking ones, then the flags
_GLOBAL_VALUED = ("--db", "--model")
_GLOBAL_FLAGS = ("--json",)


def hoist_global_options(argv: list[str]) -> list[str]:
    """``--db PATH``, ``--model NAME`` and ``--json`` written before the command, moved after it,
    where every command takes them (``mnemo --db x.db search q`` = ``mnemo search --db x.db q``).
    Anything else before the command (``--help``, ``--version``, a typo) is left for click."""
    moved: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_FLAGS:
            moved.append(arg)
            i += 1
        elif arg in _GLOBAL_VALUED and i + 1 < len(argv):
            moved += argv[i : i + 2]
            i += 2
        elif arg.split("=", 1)[0] in _GLOBAL_VALUED and "=" in arg:
            moved.append(arg)
            i += 1
        else:
            break
    if not moved or i >= len(argv) or argv[i].startswith("-"):
        return argv  # no command after them (or other options first): click says what is wrong
    return [argv[i], *moved, *argv[i + 1 :]]


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: library errors become one clear line and an exit code, never a traceback."""
    argv = hoist_global_options(list(argv if argv is not None else sys.argv[1:]))
    as_json = "--json" in argv
    try:
        main_group.main(args=argv, prog_name="mnemo", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MnemoError as exc:
        _fail(str(exc), type(exc).__name__, exc.exit_code, as_json, getattr(exc, "problems", None) if isinstance(exc, ImportFormatError) else None)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except (BrokenPipeError, click.exceptions.Exit) as exc:
        sys.exit(getattr(exc, "exit_code", 0))
    except OSError as exc:
        _fail(f"{exc.strerror or exc}{': ' + str(exc.filename) if getattr(exc, 'filename', None) else ''}", "OSError", 1, as_json)
    except (ValueError, UnicodeError) as exc:  # a NUL byte in a path, undecodable bytes in a name: the input's fault
        if isinstance(exc, UnicodeError) or "null byte" in str(exc):
            _fail(f"invalid input: {str(exc)[:200]}", "InvalidInputError", 2, as_json)
        _internal(exc, as_json)
    except Exception as exc:  # e.g. a driver error from a damaged file: still one line
        from .._stores import is_database_error

        if is_database_error(exc):
            _fail(f"database error: {exc}{_damage_hint(exc)}", type(exc).__name__, 4, as_json)
        _internal(exc, as_json)


def _internal(exc: BaseException, as_json: bool) -> None:
    """A bug: one line that says so (exit 70, EX_SOFTWARE), not a traceback in the person's
    terminal; ``MNEMO_DEBUG=1`` shows the traceback for the report."""
    if os.environ.get("MNEMO_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        raise exc
    _fail(f"internal error: {type(exc).__name__}: {str(exc)[:200]} (a bug in mnemo; MNEMO_DEBUG=1 shows where it happened)",
          "InternalError", 70, as_json)


def _fail(message: str, kind: str, code: int, as_json: bool, problems: list[tuple[int, str]] | None = None) -> None:
    if as_json:
        payload: dict[str, Any] = {"error": message, "kind": kind}
        if problems:
            payload["problems"] = [{"line": ln, "error": msg} for ln, msg in problems]
        click.echo(json.dumps(payload, ensure_ascii=False))
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


# ---------------------------------------------------------------- doctor --salvage

def _salvage(state: CLIState, output: str) -> None:
    """``mnemo doctor --salvage NEW.db``: the configured store's readable memories into NEW.db,
    reindexed with the configured model; exit 1 when nothing could be saved."""
    from .._core.mnemo import Mnemo
    from .._stores import is_url

    c = state.config
    if is_url(c.db):
        raise click.UsageError("--salvage rescues a damaged SQLite file; a PostgreSQL database is restored with its server's tools")
    if not os.path.exists(c.db):
        raise click.UsageError(f"no store at {c.db} to salvage")
    options = {"model": c["model"], "embed_base_url": c["embed_base_url"] or None, "threads": c["embed_threads"] or None}
    with _render.progress("embedding", enabled=not state.as_json) as tick:
        report = Mnemo.salvage(c.db, output, key=state.key(), progress=tick, **options)
    state.emit(report, lambda: _render.line(_salvage_summary(c.db, report)))
    if not report["memories_saved"] and report["memories_known"]:
        sys.exit(1)


def _salvage_summary(source: str, report: dict[str, Any]) -> str:
    """The salvage report in a few lines: how many memories of how many, what was lost, what next."""
    saved, known = report["memories_saved"], report["memories_known"]
    of = f" of {known}" if known is not None else " (how many the store held is unknown: its index is damaged too)"
    lines = [f"saved {saved}{of} memories from {source} into {report['path']}, with {report['events']} history events, "
             f"{report['relations']} links and {report['sources']} sources; {report['reindex']['embedded']} memories embedded"]
    if report["lost_ids"]:
        shown = ", ".join(report["lost_ids"][:5]) + (f" and {len(report['lost_ids']) - 5} more" if len(report["lost_ids"]) > 5 else "")
        lines.append(f"lost (on unreadable pages): {shown}")
    if report["damaged_ids"]:
        lines.append(f"left out (their text was damaged): {', '.join(report['damaged_ids'][:5])}")
    lines.append(f"{source} was not changed; check the new store (mnemo --db {report['path']} doctor), then put it in the old one's place")
    return "\n".join(lines)


def _damage_hint(exc: BaseException) -> str:
    """For SQLite's "malformed" error (damage found after the store opened), the way out."""
    apsw = sys.modules.get("apsw")  # loaded, since the error is its; the CLI never imports the driver itself
    return "; rescue what can be read: `mnemo doctor --salvage NEW.db`" if apsw is not None and isinstance(exc, apsw.CorruptError) else ""
