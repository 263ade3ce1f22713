"""Bulk and housekeeping operations of the core: export, import, reindex, doctor, salvage.

A mixin of :class:`mnemo.Mnemo` (kept apart only to keep modules small); it uses the same store,
embedder and validation as ``remember``.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .._base import text as _text
from .._base.models import STATUSES, Memory, check_metadata, check_scope, check_vectors_mode, embed_text, format_time, load_json, parse_time, utcnow
from .._capture import detect_model as _detect_model
from .._recall.embed import on_idle_cores
from .._stores import is_url
from .._stores.base import Filters
from ..errors import ImportFormatError, InvalidInputError, MnemoError, NotFoundError

if TYPE_CHECKING:
    from .mnemo import Mnemo

#: ``progress(done, total)`` callbacks drive the CLI's progress bars
Progress = Callable[[int, int], None]
EXPORT_FORMATS = ("markdown", "json", "jsonl")
IMPORT_BATCH = 128
#: the kinds of link between memories (the relations table's CHECK in both schemas)
LINK_KINDS = ("related", "supersedes", "derived_from", "cause_effect")
_KEEP_FIELDS = ("status", "access_count", "last_accessed_at", "expires_at", "superseded_by", "updated_at")


def _noop(done: int, total: int) -> None:
    pass


#: memories embedded per step of a background fill (the warm service, a long-lived surface): two
#: 512-character chunks are ~0.4 s of e5 on two cores (one per core), all a request that arrives
#: meanwhile waits
FILL_STEP = 2


class MaintenanceOps:
    """activity · export · import_ · reindex · purge · doctor · salvage."""

    # ------------------------------------------------------------ activity

    def activity(self: "Mnemo", *, weeks: int = 12, now: str | datetime | None = None) -> dict[str, Any]:
        """The store over time, per week (Monday first, oldest first, the current week last):
        memories created by type and by scope (whatever their status now) and context
        injections. ``{"weeks": [date…], "created_by_type": {type: [n…]}, "created_by_scope":
        {scope: [n…]}, "injections": [n…]}``."""
        weeks = max(1, min(int(weeks), 520))
        today = (parse_time(now) if now else utcnow()).date()
        start = today - timedelta(days=today.weekday() + 7 * (weeks - 1))
        labels = [(start + timedelta(days=7 * i)).isoformat() for i in range(weeks)]

        def week(day: str) -> int:
            return (date.fromisoformat(day) - start).days // 7

        by_type: dict[str, list[int]] = {}
        by_scope: dict[str, list[int]] = {}
        for day, type_, scope, n in self.store.created_per_day(start.isoformat()):
            w = week(day)
            if 0 <= w < weeks:
                by_type.setdefault(type_, [0] * weeks)[w] += n
                by_scope.setdefault(scope, [0] * weeks)[w] += n
        injections = [0] * weeks
        for day, n in self.store.injections_per_day(start.isoformat()).items():
            if 0 <= week(day) < weeks:
                injections[week(day)] += n
        return {"weeks": labels, "created_by_type": by_type, "created_by_scope": by_scope, "injections": injections}

    # ------------------------------------------------------------ export

    def export(self: "Mnemo", fmt: str = "json", output: str | os.PathLike[str] | IO[str] | None = None, *,
               include_deleted: bool = False, full: bool = False) -> int:
        """Write every memory (deleted ones only when asked) as ``markdown``, ``json`` or ``jsonl``.

        ``full`` makes the export a backup: every memory of every status, each with its
        ``history`` (events, times included) and its outgoing ``links``, which :meth:`import_`
        restores as they were (JSON and JSON Lines only). ``output`` is a path (written
        atomically), a text stream, or ``None`` for a string (returned via :meth:`export_text`).
        Returns the number of memories written."""
        if fmt not in EXPORT_FORMATS:
            raise InvalidInputError(f"export format must be one of {', '.join(EXPORT_FORMATS)}, not {fmt!r}")
        if full and fmt == "markdown":
            raise InvalidInputError("a full export is a backup that import reads back: use --format json or jsonl")
        statuses = STATUSES if include_deleted or full else tuple(s for s in STATUSES if s != "deleted")
        memories = list(self.store.iter_all(statuses))
        if output is None or hasattr(output, "write"):
            _write_export(output or io.StringIO(), fmt, memories, self, full)  # type: ignore[arg-type]
            return len(memories)
        target = Path(output).expanduser()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.parent.resolve()))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                _write_export(fh, fmt, memories, self, full)
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return len(memories)

    def export_text(self: "Mnemo", fmt: str = "json", *, include_deleted: bool = False, full: bool = False) -> str:
        """The export as a string."""
        buf = io.StringIO()
        self.export(fmt, buf, include_deleted=include_deleted, full=full)
        return buf.getvalue()

    # ------------------------------------------------------------ import

    def import_(
        self: "Mnemo",
        source: str | os.PathLike[str] | Iterable[dict[str, Any]],
        *,
        skip_invalid: bool = False,
        progress: Progress = _noop,
        dedup: bool = False,
        vectors: str = "now",
    ) -> dict[str, Any]:
        """Import memories from a JSON / JSONL file (or an iterable of dicts).

        Only ``content`` is required; a given ``id``, ``created_at`` (naive = local time),
        ``scope``, ``type``, tags and the rest are kept. A record of a full export (one with a
        ``history``) is restored as it was: its history replaces the import's own event, its
        metadata and the time it entered the store are kept, and its ``links`` are made once
        every record is in (a link whose other end is in neither is left out). Idempotent:
        records whose id is already stored — or, without an id, whose text is already in that
        scope — are skipped.
        Malformed records abort the import before anything is written (their line numbers are
        in the error), unless ``skip_invalid`` imports the rest and reports them. ``dedup`` applies
        the conversational write rules (merge repeats, link related, supersede) instead of keeping
        every record. ``vectors="later"``: the records are searchable by their words as soon as
        the import returns and get their vectors from :meth:`fill_vectors` (the warm service runs
        it in the background); the report's ``vectors_pending`` says how many wait."""
        defer = check_vectors_mode(vectors, dedup=dedup)
        records = list(_read_records(source)) if isinstance(source, (str, os.PathLike)) else [(i + 1, r) for i, r in enumerate(source)]
        problems: list[tuple[int, str]] = []
        prepared: list[tuple[int, Memory, dict[str, Any]]] = []
        for line, rec in records:
            if isinstance(rec, Exception):
                problems.append((line, str(rec)))
                continue
            if not isinstance(rec, dict):
                problems.append((line, "not a JSON object"))
                continue
            try:
                mem = self._prepare(rec)
                extra = _extra_fields(rec)
            except MnemoError as exc:
                problems.append((line, str(exc)))
                continue
            prepared.append((line, mem, extra))
        if dedup and any("_history" in extra for _, _, extra in prepared):
            raise InvalidInputError("this is a full export, restored as it was: --dedup (the write rules for new memories) does not apply to it")
        if problems and not skip_invalid:
            shown = "; ".join(f"line {ln}: {msg}" for ln, msg in problems[:5])
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise ImportFormatError(f"{len(problems)} malformed record(s), nothing imported: {shown}{more}", problems)
        # idempotence: by id when given, else by (normalised text, scope)
        existing_ids = self.store.existing_ids([m.id for _, m, _ in prepared])
        seen_ids: set[str] = set()
        seen_hashes: set[tuple[str, str]] = set()
        todo: list[tuple[Memory, dict[str, Any], bool]] = []  # (memory, extra fields, has an id)
        skipped = 0
        for line, mem, extra in prepared:
            has_id = bool(extra.pop("_has_id"))
            key = (mem.content_hash, mem.scope)
            if mem.id in existing_ids or mem.id in seen_ids or (not has_id and key in seen_hashes):
                skipped += 1
                continue
            seen_ids.add(mem.id)
            seen_hashes.add(key)
            todo.append((mem, extra, has_id))
        without_id = [(m.content_hash, m.scope) for m, _, has in todo if not has]
        known = self.store.existing_hashes(without_id) if without_id else set()
        kept = [(m, e, has) for m, e, has in todo if has or (m.content_hash, m.scope) not in known]
        skipped += len(todo) - len(kept)
        progress(0, len(kept))
        done = imported = 0
        links: list[tuple[str, list[dict[str, Any]]]] = []
        for start in range(0, len(kept), IMPORT_BATCH):
            batch = kept[start : start + IMPORT_BATCH]
            if dedup:
                results = self.remember_many([_as_record(m, e) for m, e, _ in batch], cause="import", dedup=True)
                n = sum(1 for _, action in results if action != "merged")
            else:
                n = self._insert_prepared(batch, cause="import", links=links, defer=defer)
            imported += n
            skipped += len(batch) - n
            done += len(batch)
            progress(done, len(kept))
        if links:
            self._restore_links(links)
        report = {"read": len(records), "imported": imported, "skipped_existing": skipped, "invalid": [{"line": ln, "error": msg} for ln, msg in problems]}
        if defer:
            report["vectors_pending"] = self.vectors_pending()
        return report

    def _insert_prepared(self: "Mnemo", batch: list[tuple[Memory, dict[str, Any], bool]], *, cause: str,
                         links: list[tuple[str, list[dict[str, Any]]]] | None = None, defer: bool = False) -> int:
        """Embed (what is not cached) and insert prepared ``(memory, extra fields, has_id)`` in one
        transaction; returns how many were inserted. The idempotence check is repeated inside the
        transaction, because another process may be importing the same file at the same time.
        A full export's history replaces the memory's events; its links are appended to ``links``
        (made later, when both ends are in)."""
        inserted = 0
        with self._writing([mem for mem, _, _ in batch], cause=cause, defer=defer) as rows:
            for (mem, vector, insert), (_, extra, has_id) in zip(rows, batch):
                if self.store.pk_of(mem.id) is not None:
                    continue
                if not has_id and self.store.existing_hashes([(mem.content_hash, mem.scope)]):
                    continue
                for key, value in extra.items():
                    if not key.startswith("_"):
                        setattr(mem, key, value)
                insert()
                if "_history" in extra:
                    self.store.replace_events(mem.id, extra["_history"])
                if extra.get("_links") and links is not None:
                    links.append((mem.id, extra["_links"]))
                inserted += 1
        return inserted

    def _restore_links(self: "Mnemo", links: list[tuple[str, list[dict[str, Any]]]]) -> None:
        """The links of the memories a full import restored, in one transaction once all of them
        are in (a link may point to a memory later in the file); a link to a memory that is not
        in the store is left out."""
        targets = self.store.existing_ids(list({link["to"] for _, out in links for link in out}))
        with self.store.transaction():
            for src, out in links:
                for link in out:
                    if link["to"] in targets:
                        self.store.add_relation(src, link["to"], link["kind"], link["strength"])

    # ------------------------------------------------------------ reindex

    def _embed_texts(self: "Mnemo", rows: Sequence[tuple[int, str]]) -> dict[int, str]:
        """``pk → the text a memory is embedded and indexed as``: its content, after the title and
        heading prefix of an ingested chunk (kept in its metadata)."""
        mems = self.store.get_many_by_pk([pk for pk, _ in rows])
        return {pk: embed_text(mems[pk]) if pk in mems else content for pk, content in rows}

    def reindex(self: "Mnemo", *, fts: bool = True, progress: Progress = _noop, batch_size: int = 64) -> dict[str, Any]:
        """Rebuild the derived index for the configured model: full-text rows, then missing vectors.

        Resumable: vectors are committed batch by batch and a rerun only embeds what is
        missing. When every memory has a vector of the configured model, it becomes the store's
        model and other models' vectors are dropped."""
        name = self.embedder.name
        total_fts = 0
        if fts:
            after = 0
            while True:
                rows = self.store.fts_rows_after(after, 1000)
                if not rows:
                    break
                texts = self._embed_texts(rows)
                with self.store.transaction():
                    for pk, _ in rows:
                        self.store.set_fts(pk, _text.index_tokens(texts[pk]))
                after = rows[-1][0]
                total_fts += len(rows)
        done = self._embed_missing(progress=progress, batch_size=batch_size, limit=None, in_place=False)
        with self.store.transaction():
            previous = self.store.get_meta("embedder")
            dropped = 0
            if previous != name or self.store.get_meta("dim") is None:
                dim = self._embed(["dimension probe"], query=False).shape[1]
                self.store.set_meta("embedder", name)
                self.store.set_meta("dim", str(dim))
            dropped = self.store.drop_embeddings_except(name)
            self.store.set_meta("generation", _generation())
        self._index = None
        return {"model": name, "previous_model": previous, "fts_rows": total_fts, "embedded": done, "dropped_vectors": dropped}

    # ------------------------------------------------------------ vectors filled in later

    def vectors_pending(self: "Mnemo") -> int:
        """How many memories have no vector of the configured model yet (a bulk import with
        ``vectors="later"`` leaves them for :meth:`fill_vectors`)."""
        return self.store.count_missing_embeddings(self.embedder.name)

    def fill_vectors(self: "Mnemo", *, limit: int | None = None, progress: Progress = _noop, batch_size: int = 16,
                     idle_cores: bool = False) -> dict[str, Any]:
        """Embed memories that have no vector of the configured model yet, a batch per
        transaction, at most ``limit`` of them (None: all). Returns ``{"embedded", "done"}``
        (``done``: nothing is left). Unlike :meth:`reindex` it never switches the store's model:
        a store built with another model is refused (:class:`ModelMismatchError`). The warm
        service calls it between requests with a small limit, so a hook waits for one batch
        at most; every process's vector index picks the new vectors up on its next query.
        ``idle_cores``: embed with as many engine threads as cores are idle right now (the
        service keeps one for its hooks' queries)."""
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidInputError("limit must be a positive number of memories")
        self._check_model()
        with on_idle_cores(self.embedder) if idle_cores else nullcontext():
            embedded = self._embed_missing(progress=progress, batch_size=max(1, min(int(batch_size), 256)), limit=limit, in_place=True)
        done = limit is None or embedded < limit or not self.store.missing_embeddings(self.embedder.name, 0, 1)
        return {"embedded": embedded, "done": bool(done)}

    def _embed_missing(self: "Mnemo", *, progress: Progress, batch_size: int, limit: int | None, in_place: bool) -> int:
        """Embed memories without a vector of the configured model in pk order, one transaction
        per batch (resumable). ``in_place`` (filling, not rebuilding): record the model on a store
        that has none yet and give the filled rows a new seq, so indexes already loaded pick them
        up; a reindex does neither, since it records the model and starts a new generation (every
        index reloaded) at the end. Returns how many memories got one."""
        name = self.embedder.name
        total = 0
        if progress is not _noop:  # the count scans the store: only for someone watching
            missing = self.store.count_missing_embeddings(name)
            total = missing if limit is None else min(missing, limit)
        progress(0, total)
        done = after = 0
        while limit is None or done < limit:
            rows = self.store.missing_embeddings(name, after, batch_size if limit is None else min(batch_size, limit - done))
            if not rows:
                break
            by_pk = self._embed_texts([(pk, content) for pk, _, content, _ in rows])
            texts: dict[str, str] = {}
            for pk, _, _, h in rows:
                texts.setdefault(h, by_pk[pk])
            vecs = self._embed(list(texts.values()), query=False)
            with self.store.transaction():
                if in_place:
                    self._claim_model(vecs.shape[1])  # first: PostgreSQL copies a vector into its row only for the store's model
                self.store.put_embeddings(name, [(h, vecs.shape[1], vecs[j].tobytes()) for j, h in enumerate(texts)])
                if in_place:
                    self.store.vectors_filled(list(texts))
            after = rows[-1][0]
            done += len(rows)
            progress(done, total)
        return done

    # ------------------------------------------------------------ purge

    def purge(self: "Mnemo", memory_ids: Iterable[str] = (), *, everything: bool = False) -> dict[str, Any]:
        """The only hard delete. Removes the memories from every table and index, and their text
        and ids from everywhere else they were copied: other memories' history (a merge, a
        supersede), the injection log, a consolidation summary that quoted them (purged too; its
        other sources come back), the source row of a document none of whose chunks is left,
        and mnemo's migration backups beside the store. A content-free ``purged`` tombstone
        event stays. Then the file is rewritten so nothing remains in free pages or the WAL;
        ``complete`` is False (with a ``warning``) when another process holding the store open
        kept the old pages alive. ``everything=True`` erases the whole store. Soft delete is
        :meth:`forget`."""
        ids = list(dict.fromkeys(i.strip() for i in memory_ids if isinstance(i, str) and i.strip()))
        if not everything and not ids:
            raise InvalidInputError("name the memories to purge, or purge everything")
        summaries: list[str] = []
        with self._lock:
            with self.store.transaction():
                if everything:
                    n = self.store.purge_everything()
                else:
                    mems = {i: self.store.get(i) for i in ids}
                    missing = [i for i, mem in mems.items() if mem is None]
                    if missing:
                        raise NotFoundError(f"no memory with id {', '.join(missing[:5])}")
                    summaries = self._summaries_of(ids)
                    for sid in summaries:
                        mems[sid] = self.store.get(sid)
                    n = self.store.purge_rows(list(mems))
                    for mem in mems.values():  # after the rows: a document's source row goes with its last chunk
                        doc = mem.source if mem.source.startswith(("file:", "chat:", "url:")) else None  # type: ignore[union-attr]
                        self.store.purge_traces(mem.id, mem.content, doc)  # type: ignore[union-attr]
                self.store.set_meta("generation", _generation())
            complete = self.store.scrub()
            removed = []
            for f in self.store.backup_files():  # a migration backup holds the purged text too
                f.unlink(missing_ok=True)
                removed.append(str(f))
            self._index = None
            self._anchor_vecs = None
        out: dict[str, Any] = {"purged": n, "everything": everything, "summaries_purged": summaries,
                               "removed_files": removed, "complete": complete}
        if not complete:
            out["warning"] = ("another process has the store open (a warm service, an editor of the database?): the purged "
                              "text stays in the write-ahead log until it closes the store; the next mnemo command after "
                              "that writes the cleared pages back (`mnemo doctor` will do)")
        return out

    def _summaries_of(self: "Mnemo", ids: list[str]) -> list[str]:
        """Consolidation summaries made from any of ``ids``: a summary quotes its sources, so it
        goes with them; its other sources, archived when it was made, become active again."""
        found = []
        for mid in ids:
            for rel in self.store.relations(mid):
                if rel["kind"] == "derived_from" and rel["direction"] == "in" and rel["id"] not in ids and rel["id"] not in found:
                    found.append(rel["id"])
        for sid in found:
            for rel in self.store.relations(sid):
                src = self.store.get(rel["id"]) if rel["kind"] == "derived_from" and rel["direction"] == "out" else None
                if src is not None and src.id not in ids and src.status == "archived":
                    self.store.set_status(src.id, "active")
                    self.store.add_event(src.id, "restored", "purge", {"from": "archived", "reason": "its summary was purged"})
        return found

    # ------------------------------------------------------------ doctor

    @classmethod
    def salvage(cls: "type[Mnemo]", damaged: str | os.PathLike[str], output: str | os.PathLike[str], *, key: str | None = None,
                progress: Progress = _noop, **options: Any) -> dict[str, Any]:
        """Rescue what can still be read from the damaged SQLite store file ``damaged`` into a new
        store at ``output`` (same key), then rebuild its full-text rows and vectors as
        :meth:`reindex` does. The damaged file is never written. ``options`` are the ``Mnemo``
        arguments the new store is opened with to reindex it (``model``, ``embedder``…). Returns
        the salvage report (``memories_saved`` of ``memories_known``, ``lost_ids``, ``damaged_ids``,
        events, relations, sources, the rowid ranges skipped) with the ``reindex`` report."""
        from .._stores.sqlite_salvage import salvage as _salvage

        if is_url(os.fspath(damaged)) or is_url(os.fspath(output)):
            raise InvalidInputError("salvage reads a damaged SQLite file into a new one; a PostgreSQL database is repaired with its server's tools")
        report = _salvage(damaged, output, key=key)
        with cls(output, key=key, create=False, **options) as m:
            report["reindex"] = m.reindex(progress=progress)
        return report

    def visibility(self: "Mnemo", scope: str | None = None, private: bool | None = None) -> dict[str, Any]:
        """On a PostgreSQL team store: make ``scope`` private to this database role (``private``
        True) or shared with the team again (False); without arguments, only report. Returns
        ``{"role", "private_scopes"}``. Private memories are hidden from every other role by
        PostgreSQL's row-level security; a SQLite file is private to its owner already."""
        if not is_url(self.store.url):
            raise InvalidInputError("visibility is for PostgreSQL team stores (--db postgresql://…); a SQLite file is private to its owner")
        store: Any = self.store  # the PostgreSQL store's team methods
        if scope is not None:
            if private is None:
                raise InvalidInputError("say private or shared, e.g. `mnemo visibility project:notes private`")
            with store.transaction():
                store.set_private_scope(check_scope(scope), private)
        return {"role": store.whoami(), "private_scopes": store.private_scopes()}

    def doctor(self: "Mnemo") -> list[dict[str, str]]:
        """Self-check. Each entry: ``check``, ``status`` (ok · warn · fail), ``detail``, ``fix``."""
        out: list[dict[str, str]] = []

        def add(check: str, ok: bool | None, detail: str, fix: str = "") -> None:
            out.append({"check": check, "status": "ok" if ok else ("warn" if ok is None else "fail"), "detail": detail, "fix": "" if ok else fix})

        version, latest = self.store.schema_versions()  # each backend numbers its own migrations
        add("schema", version == latest, f"schema version {version} (this mnemo: {latest})", "upgrade mnemo")
        problems = self.store.integrity_problems()
        add("integrity", not problems, ("schema, extensions and vector column ok" if is_url(self.store.url) else "SQLite quick_check ok") if not problems else "; ".join(problems[:3]),
            "restore from a backup, or rescue what is readable: `mnemo doctor --salvage NEW.db`" if not is_url(self.store.url)
            else "restore from a backup, or `mnemo export --full` what is readable and import it into a new store")
        stored = self.store.get_meta("embedder")
        try:
            name = self.embedder.name
            probe = self._embed(["mnemo doctor probe"], query=True)
            dim = probe.shape[1]
            add("model", True, f"{name}, {dim}-d, loads and embeds offline")
        except MnemoError as exc:
            add("model", False, str(exc), "check the model setting (`mnemo config`)")
            return out
        if stored is None:
            add("index model", True, f"no vectors yet; the first write records {name}")
        else:
            same = stored == name and int(self.store.get_meta("dim") or 0) == dim
            add("index model", same, f"index built with {stored} ({self.store.get_meta('dim')}-d)", "run `mnemo reindex` to rebuild it for the configured model")
            if problems:  # reading the index of a damaged store may fail half-way: the integrity check says what to do
                add("vectors", None, "skipped: the store is damaged", "see integrity")
            else:
                missing = self.store.count_missing_embeddings(name) if same else 0
                add("vectors", missing == 0, f"{missing} memories without a vector" if missing else "every memory has a vector", "run `mnemo reindex`")
        add("write-probe", *((None, "skipped: the store is damaged", "see integrity") if problems else self._write_probe()))
        off = _detect_model.problem()
        add("capture model", None if off else True, off or "the capture detector's second stage loads",
            "reinstall mnemo; until then the capture rules decide alone")
        base_url = getattr(self.embedder, "base_url", None)
        sent = []
        if base_url:
            sent.append(f"memory text and queries (after redaction) go to {base_url} to be embedded")
        if self.chat is not None:
            sent.append(f"pairs of similar memories and groups to summarise (after redaction) go to {self.chat.base_url}")
        if sent:
            add("network", None, "; ".join(sent) + "; nothing else leaves this machine",
                "use a bundled model (--model e5 or use) and no llm_base_url to keep everything local")
        else:
            add("network", True, "no endpoint configured: nothing leaves this machine")
        add("encryption", True, "the store file is encrypted" if self.store.encrypted
            else "the store file is not encrypted (`mnemo encrypt` encrypts it at rest)")
        from .._replica.folders import sync_tool_of

        # one check on every backend (a server's store is no file a sync tool copies)
        tool = None if is_url(self.store.url) else sync_tool_of(self.store.url)
        add("sync folder", None if tool else True,
            f"the store sits in a folder {tool} syncs: a live store copied while it is written forks or breaks" if tool
            else ("a database server's store: no file for a sync tool to copy" if is_url(self.store.url)
                  else "the store is not inside a folder a sync tool manages"),
            "move the store out (`mnemo migrate --to NEW_PATH`, then use it with --db or MNEMO_DB) and share memory "
            "with `mnemo sync FOLDER` on a folder inside the synced one")
        leftovers = self.store.conversion_leftovers()
        add("conversion leftovers", None if leftovers else True,
            "; ".join(leftovers) or "no half-made conversion or unconverted backup beside the store",
            "any mnemo command finishes an interrupted encrypt/decrypt/rekey; delete the files named")
        return out

    def _write_probe(self: "Mnemo") -> tuple[bool | None, str, str]:
        """Write a memory, find it by words and by meaning, then roll everything back."""
        reason = getattr(self.store, "read_only_reason", "")
        if reason:  # a warning, not a failure: reading is all a read-only store is for
            return None, f"skipped: the store is read-only here ({reason})", "copy it somewhere writable to change it"
        marker = f"mnemo doctor probe {os.urandom(4).hex()}"
        mem = self._prepare({"content": marker, "scope": "mnemo:doctor"})
        vec = self._embed([marker], query=False)
        h = _text.text_hash(marker)
        with self.store.rolled_back():
            self.store.put_embeddings(self.embedder.name, [(h, vec.shape[1], vec[0].tobytes())])
            self.store.insert(mem, embed_hash=h, tokens=_text.index_tokens(marker), cause="doctor")
            pk = self.store.pk_of(mem.id)
            terms, phrases = _text.query_terms(marker)
            fts_ok = any(p == pk for p, _ in self.store.fts_search(_text.fts_match_expression(terms, phrases) or "", Filters(scopes=["mnemo:doctor"]), 5))
            blob = self.store.get_embeddings(self.embedder.name, [h]).get(h)
            vec_ok = blob is not None and len(blob) == vec.nbytes
        self._index = None
        ok = fts_ok and vec_ok
        return ok, "write, full-text and vector probe ok (rolled back)" if ok else f"probe failed (full-text {fts_ok}, vector {vec_ok})", "run `mnemo reindex`"


def _as_record(mem: Memory, extra: dict[str, Any]) -> dict[str, Any]:
    """A prepared memory back as a ``remember`` record (for imports through the write rules)."""
    keep = ("id", "content", "type", "scope", "tags", "importance", "confidence", "source", "source_session", "created_at", "metadata", "pinned")
    return {**{k: getattr(mem, k) for k in keep}, **{k: v for k, v in extra.items() if k == "expires_at"}}


def _generation() -> str:
    """A new index generation: other processes rebuild their vector index when it changes."""
    return utcnow().strftime("%Y%m%d%H%M%S") + os.urandom(4).hex()


def _extra_fields(rec: dict[str, Any]) -> dict[str, Any]:
    """Fields an export carries beyond what ``remember`` takes, validated."""
    extra: dict[str, Any] = {"_has_id": bool(rec.get("id"))}
    if rec.get("status") is not None:
        if rec["status"] not in STATUSES:
            raise InvalidInputError(f"unknown status {rec['status']!r}")
        extra["status"] = rec["status"]
    if rec.get("access_count") is not None:
        if not isinstance(rec["access_count"], int) or rec["access_count"] < 0:
            raise InvalidInputError("access_count must be a non-negative integer")
        extra["access_count"] = rec["access_count"]
    for key in ("last_accessed_at", "expires_at", "updated_at"):
        if rec.get(key):
            extra[key] = format_time(parse_time(rec[key], field_name=key))
    if rec.get("superseded_by"):
        extra["superseded_by"] = str(rec["superseded_by"])
    if rec.get("history") is not None:  # a full export's record: restored as it was
        extra["_history"] = _check_history(rec["history"])
        extra["_links"] = _check_links(rec.get("links"))
        extra["metadata"] = check_metadata(rec.get("metadata"))
        if rec.get("stored_at"):
            extra["stored_at"] = format_time(parse_time(rec["stored_at"], field_name="stored_at"))
    elif rec.get("links"):
        raise InvalidInputError("links without a history: only a full export (mnemo export --full) carries links")
    return extra


def _check_history(history: Any) -> list[dict[str, Any]]:
    """A full export's ``history``: a list of ``{"kind", "at", "cause", "data"}``, oldest first."""
    if not isinstance(history, list):
        raise InvalidInputError("history must be a list of events")
    out = []
    for event in history:
        if not isinstance(event, dict) or not isinstance(event.get("kind"), str) or not event["kind"]:
            raise InvalidInputError("each history event needs a \"kind\"")
        if event.get("cause") is not None and not isinstance(event["cause"], str):
            raise InvalidInputError("a history event's cause must be a string")
        data = event.get("data") if event.get("data") is not None else {}
        if not isinstance(data, dict):
            raise InvalidInputError("a history event's data must be an object")
        out.append({"kind": event["kind"], "at": format_time(parse_time(event.get("at") or "", field_name="history at")),
                    "cause": event.get("cause"), "data": data})
    return out


def _check_links(links: Any) -> list[dict[str, Any]]:
    """A full export's ``links``: ``{"to", "kind", "strength"}`` from this memory."""
    if links is None:
        return []
    if not isinstance(links, list):
        raise InvalidInputError("links must be a list")
    out = []
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("to"), str) or not link["to"].strip():
            raise InvalidInputError("each link needs the id it goes \"to\"")
        if link.get("kind") not in LINK_KINDS:
            raise InvalidInputError(f"unknown link kind {link.get('kind')!r} (one of {', '.join(LINK_KINDS)})")
        strength = link.get("strength", 1.0)
        if isinstance(strength, bool) or not isinstance(strength, (int, float)):
            raise InvalidInputError("a link's strength must be a number")
        out.append({"to": link["to"].strip(), "kind": link["kind"], "strength": float(strength)})
    return out


#: the first line of a Markdown export, by which import recognises one
MARKDOWN_EXPORT_HEAD = "# mnemo export"
#: the largest import file read whole (a JSONL export of a million memories is ~1 GiB)
MAX_IMPORT_BYTES = 2 * 1024 ** 3


def _read_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line, record-or-exception)`` from a JSON array / object or a JSON Lines file."""
    p = Path(path).expanduser()
    try:
        if p.exists() and not p.is_file():  # a FIFO would block the read for ever
            raise InvalidInputError(f"{p} is not a regular file")
        if p.exists() and p.stat().st_size > MAX_IMPORT_BYTES:
            raise InvalidInputError(f"{p} is over {MAX_IMPORT_BYTES // 1024 ** 3} GiB; split it into several files")
        raw = p.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {p}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{p} is not UTF-8 text (is it a binary file?)") from None
    stripped = text.lstrip()
    if not stripped:
        raise InvalidInputError(f"{p} is empty")
    if stripped.startswith(MARKDOWN_EXPORT_HEAD):  # one clear line, not one JSON error per line of Markdown
        raise InvalidInputError(f"{p} is a Markdown export; import reads JSON or JSON Lines exports (mnemo export --format json)")
    if stripped[0] in "[{":
        try:
            doc = load_json(text)
        except json.JSONDecodeError as exc:
            if stripped[0] == "[":
                raise ImportFormatError(f"{p}: invalid JSON at line {exc.lineno}: {exc.msg}", [(exc.lineno, exc.msg)]) from None
            doc = None  # JSON Lines starting with an object: parse line by line below
        if doc is not None:
            items = doc.get("memories") if isinstance(doc, dict) and "memories" in doc else doc
            if isinstance(items, dict):
                items = [items]
            if not isinstance(items, list):
                raise InvalidInputError(f"{p}: expected a list of memories or {{\"memories\": [...]}}")
            yield from ((i + 1, r) for i, r in enumerate(items))
            return
    lines: list[tuple[int, Any]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append((n, load_json(line)))
        except json.JSONDecodeError as exc:
            lines.append((n, InvalidInputError(f"invalid JSON ({exc.msg})")))
    if stripped[0] != "{" and all(isinstance(rec, Exception) for _, rec in lines):  # prose, Markdown, CSV: no export at all
        raise InvalidInputError(f"{p} is not JSON or JSON Lines; import reads mnemo's exports (mnemo export --format json), "
                                "`mnemo ingest` reads documents")
    yield from lines


def _export_record(mem: Memory, m: "Mnemo", full: bool) -> dict[str, Any]:
    """One memory as an export record; a full export's also carries its history and the links
    it starts (each link is written once, at its source, as the store keeps it)."""
    rec = mem.to_dict()
    if full:
        rec["history"] = m.store.events(mem.id)
        rec["links"] = [{"to": r["id"], "kind": r["kind"], "strength": r["strength"]}
                        for r in m.store.relations(mem.id) if r["direction"] == "out"]
    return rec


def _write_export(fh: IO[str], fmt: str, memories: list[Memory], m: "Mnemo", full: bool = False) -> None:
    if fmt == "jsonl":
        for mem in memories:
            fh.write(json.dumps(_export_record(mem, m, full), ensure_ascii=False) + "\n")
        return
    if fmt == "json":
        doc = {"format": "mnemo-export", "version": 1, "exported_at": format_time(utcnow()), "model": m.store.get_meta("embedder"),
               **({"full": True} if full else {}), "memories": [_export_record(mem, m, full) for mem in memories]}
        json.dump(doc, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
        return
    fh.write(f"{MARKDOWN_EXPORT_HEAD}\n\nExported {format_time(utcnow())} from `{m.path}` — {len(memories)} memories.\n")
    by_scope: dict[str, list[Memory]] = {}
    for mem in memories:
        by_scope.setdefault(mem.scope, []).append(mem)
    for scope in sorted(by_scope):
        fh.write(f"\n## {scope}\n")
        by_type: dict[str, list[Memory]] = {}
        for mem in by_scope[scope]:
            by_type.setdefault(mem.type, []).append(mem)
        for mtype in sorted(by_type):
            fh.write(f"\n### {mtype}\n\n")
            for mem in sorted(by_type[mtype], key=lambda x: x.created_at):
                body = mem.content.replace("\n", "\n  ")
                tags = f" · tags: {', '.join(mem.tags)}" if mem.tags else ""
                status = f" · **{mem.status}**" if mem.status != "active" else ""
                fh.write(f"- {body}\n  <sub>`{mem.id}` · {mem.created_at[:10]} · importance {mem.importance:g}{tags}{status}</sub>\n")
