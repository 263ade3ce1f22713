"""How the CLI shows results to people (``--json`` bypasses all of this)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._base.models import Hit, Memory

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def line(text: str) -> None:
    out.print(escape(text))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def init(info: dict[str, Any]) -> None:
    verb = "created" if info["created"] else "found"
    out.print(f"{verb} store [bold]{escape(info['path'])}[/] — {info['total']} memories, schema v{info['schema_version']}")


def saved(mem: Memory, action: str, links: list[dict[str, Any]] | None = None) -> None:
    if action == "merged":
        out.print(f"already remembered: merged into [bold]{mem.id}[/] (tags and importance updated; undo: mnemo restore {mem.id})")
        return
    out.print(f"saved [bold]{mem.id}[/] · {mem.type} · {escape(mem.scope)}")
    for link in links or []:
        if link["kind"] == "supersedes" and link["direction"] == "out":
            out.print(f"  supersedes {link['id']} (kept in history; undo: mnemo restore {link['id']})")
        elif link["kind"] == "related":
            out.print(f"  related to {link['id']} ({link['strength']:.2f})")


def _when(ts: str | None) -> str:
    return (ts or "")[:10]


#: a hit longer than this is shown by its start (the whole text: ``mnemo show ID`` or ``--json``)
LONG_HIT = 400


def hits(results: list[Hit], explain: bool) -> None:
    if not results:
        out.print("[dim]no relevant memories[/]")
        return
    for n, h in enumerate(results, 1):
        m = h.memory
        tags = f" · #{' #'.join(m.tags)}" if m.tags else ""
        shown = escape(m.content)
        if len(m.content) > LONG_HIT:
            shown = escape(m.content[:LONG_HIT]) + f" … [dim]({len(m.content):,} characters: mnemo show {m.id[:SHORT_ID]})[/]"
        out.print(f"[bold]{n}.[/] {shown}")
        out.print(f"   [dim]{h.score:.3f} · {m.type} · {escape(m.scope)} · {_when(m.created_at)} · {m.id}{escape(tags)}[/]")
        if h.via is not None and h.link is not None:  # added by --expand, not found by the query itself
            out.print(f"   [magenta]↳ linked ({h.link['kind']}, strength {h.link['strength']:.2f}) to {h.via}, not matched by the query[/]")
        if explain and h.explain:
            e = h.explain
            lifted = "context_of" in e
            if "relevance" in e:  # scored by the channels (a neighbour lifted from nowhere has no breakdown)
                sim = "—" if e["similarity"] is None else f"{e['similarity']:.3f} (baseline {e['baseline']:.3f})"
                out.print(
                    f"   [cyan]cosine {sim} → dense {e['dense_relevance']:.2f}; bm25 {e['bm25']:.2f} → lexical {e['lexical_relevance']:.2f}; "
                    f"relevance {e['relevance']:.3f} × importance {e['importance_factor']:.2f} × confidence {e['confidence_factor']:.2f} "
                    f"× recency {e['recency_factor']:.2f} × access {e['access_factor']:.2f} × time {e['time_factor']:.2f}"
                    + "".join(f" × {name} {e[key]:.2f}" for name, key in (("type", "type_factor"), ("scope", "scope_factor")) if e.get(key, 1.0) != 1.0)
                    + f" = {e['own_score'] if lifted else e['score']:.3f}[/]"
                )
            if lifted:
                out.print(f"   [magenta]↳ next to {e['context_of']} in its document or conversation: "
                          f"{e['context_share']:.2f} of that hit's score = {e['score']:.3f}[/]")


def scope_line(scope: str) -> None:
    """Which scopes a listing shows (the shared default of recent, list and review)."""
    out.print(f"[dim]scope: {escape('every scope' if scope == 'all' else scope + (' + global' if scope != 'global' else ''))}[/]")


def review(scope: str, expired: list[Memory], conflicts: list[dict[str, Any]], *, wide: bool = False) -> None:
    """``mnemo review``: expired memories, then possible conflicts with the command that settles each."""
    scope_line(scope)
    out.print("[bold]past their expiry[/] (mnemo confirm ID)")
    memories(expired, wide=wide)
    out.print("[bold]possible conflicts[/] (mnemo resolve NEW_ID --supersede | --keep-both)")
    if not conflicts:
        out.print("[dim]none[/]")
    for c in conflicts:
        out.print(f"  {c['new'].id}  {escape(c['new'].content[:100])}")
        out.print(f"    may replace {c['old'].id}  {escape(c['old'].content[:100])}  [dim]({escape(c['why'])})[/]")


#: characters of an id shown in a narrow table: a unique prefix of 8+ characters finds a memory
SHORT_ID = 12
#: the content column gets at least this many characters; other columns go first to make room
MIN_CONTENT = 28


def memories(items: list[Memory], *, wide: bool = False) -> None:
    """A table of memories that fits the terminal: one line per memory, the content cut with an
    ellipsis (Chinese is cut between characters, never mid-character), ids shortened to a unique
    prefix, and the scope, type and date columns dropped in that order when the content would
    get fewer than ``MIN_CONTENT`` characters. ``wide``: every column whole, the content wrapped."""
    if not items:
        out.print("[dim]no memories[/]")
        return
    rows = [(m.id, _when(m.created_at), m.type, m.scope, m.content + ("" if m.status == "active" else f" [{m.status}]")) for m in items]
    names = ["id", "created", "type", "scope", "content"]
    if not wide:
        rows = [(_short_id(r[0], items), *r[1:]) for r in rows]
    # every column but the content is as wide as its widest cell: only the content gives way
    widths = {n: max(cell_len(n), *(cell_len(str(r[i])) for r in rows)) for i, n in enumerate(names) if n != "content"}
    if not wide:
        for drop in ("scope", "type", "created"):
            if out.width - sum(w + 2 for w in widths.values()) >= MIN_CONTENT:
                break
            del widths[drop]
        keep = [i for i, n in enumerate(names) if n in widths or n == "content"]
        names, rows = [names[i] for i in keep], [tuple(r[i] for i in keep) for r in rows]
    # what is left for the content once the other columns (and the two spaces after each) are laid out
    room = max(MIN_CONTENT, out.width - sum(w + 2 for w in widths.values()))
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False, expand=False)
    for n in names:
        if n == "content":
            table.add_column(n, overflow="fold" if wide else "ellipsis", no_wrap=not wide, max_width=None if wide else room)
        else:
            table.add_column(n, no_wrap=True, min_width=widths[n], max_width=None if wide else widths[n])
    for r in rows:
        table.add_row(*(escape(str(c)) for c in r))
    out.print(table)


def _short_id(mid: str, items: list[Memory]) -> str:
    """``mid`` cut to ``SHORT_ID`` characters when that prefix is unique among ``items``."""
    short = mid[:SHORT_ID]
    return short if sum(1 for m in items if m.id.startswith(short)) == 1 else mid


def show(mem: Memory, history: list[dict[str, Any]], links: list[dict[str, Any]] | None = None) -> None:
    out.print(f"[bold]{mem.id}[/]  ({mem.status})")
    out.print(escape(mem.content))
    fields = [
        ("type", mem.type), ("scope", mem.scope), ("tags", ", ".join(mem.tags) or "—"),
        ("importance", f"{mem.importance:g}"), ("confidence", f"{mem.confidence:g}"), ("source", mem.source),
        ("created", mem.created_at), ("updated", mem.updated_at), ("last accessed", mem.last_accessed_at or "never"),
        ("accesses", str(mem.access_count)),
        ("expires", mem.expires_at or "never"), ("pinned", "yes (never decays or is archived)" if mem.pinned else "no"),
    ]
    if mem.superseded_by:
        fields.append(("superseded by", mem.superseded_by))
    for k, v in fields:
        out.print(f"  [dim]{k:>13}[/]  {escape(str(v))}")
    if links:
        out.print("[bold]links[/]")
        for link in links:
            arrow = "→" if link["direction"] == "out" else "←"
            out.print(f"  {arrow} {link['kind']} {link['id']} ({link['strength']:.2f})")
    events(history)


def events(history: list[dict[str, Any]]) -> None:
    out.print("[bold]history[/]")
    for e in history:
        cause = f" ({e['cause']})" if e.get("cause") else ""
        out.print(f"  {e['at']}  {e['kind']}{escape(cause)}")


def stats(info: dict[str, Any]) -> None:
    out.print(f"[bold]{escape(info['path'])}[/]  ({_size(info['store_bytes'])}, schema v{info['schema_version']})")
    out.print(f"  memories: [bold]{info['total']}[/] active, {info['last_7_days']} in the last 7 days, {info['all_records']} records in all")
    dim = f", {info['dim']}-d" if info["dim"] else ""
    out.print(f"  model: {escape(info['model'] or '— (no vectors yet)')}{dim}")
    if info.get("vectors_pending"):
        out.print(f"  vectors: [yellow]{info['vectors_pending']:,} memories still waiting[/] (searchable by their words; "
                  "the warm service fills them in the background, `mnemo reindex` at once)")
    for title, key in (("by type", "by_type"), ("by scope", "by_scope"), ("by status", "by_status")):
        if info[key]:
            out.print(f"  {title}: " + ", ".join(f"{escape(k)} {v}" for k, v in info[key].items()))
    for kind, used in (info.get("llm_usage") or {}).get("today", {}).items():
        out.print(f"  LLM today ({escape(kind)}): {used['calls']} calls, {used['tokens']:,} tokens")


def imported(report: dict[str, Any], pending: str | None = None) -> None:
    """An import's report; ``pending``: the line about vectors still to come."""
    out.print(f"imported {report['imported']} of {report['read']} records ({report['skipped_existing']} already present)")
    if pending:
        out.print(f"[dim]{escape(pending)}[/]")
    for p in report["invalid"]:
        err.print(f"  skipped line {p['line']}: {escape(p['error'])}")


def doctor(checks: list[dict[str, str]]) -> None:
    marks = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]"}
    for c in checks:
        out.print(f"{marks[c['status']]} {c['check']}: {escape(c['detail'])}")
        if c["fix"]:
            out.print(f"    fix: {escape(c['fix'])}")


def config(rows: list[dict[str, Any]]) -> None:
    """The settings, where each came from, and where the config file is. The environment
    variable of each (``MNEMO_`` + its name in capitals) gets its own column on a wide terminal."""
    from .._settings.config import config_path

    path = config_path()
    out.print(f"[dim]config file: {escape(str(path))}{'' if path.exists() else ' (not created yet)'}[/]")
    with_env = out.width >= 110
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", overflow="fold", max_width=32)
    if with_env:
        table.add_column("env", no_wrap=True)
    for r in rows:
        cells = [r["name"], escape(str(r["value"])), escape(r["origin"])] + ([r["env"]] if with_env else [])
        table.add_row(*cells)
    out.print(table)
    if not with_env:
        out.print("[dim]each setting's environment variable: MNEMO_ + its name in capitals (MNEMO_TOP_K)[/]")


@contextmanager
def progress(label: str, *, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A Rich progress bar on stderr (only on a terminal); yields ``tick(done, total)``."""
    if not enabled or not err.is_terminal:
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield tick


@contextmanager
def working(label: str, *, enabled: bool = True) -> Iterator[None]:
    """A spinner with ``label`` on stderr while one long step runs (only on a terminal)."""
    if not enabled or not err.is_terminal:
        yield
        return
    with err.status(label):
        yield


def redaction(text: str, findings: list[dict[str, Any]]) -> None:
    out.print(escape(text))
    if not findings:
        out.print("[dim]nothing to mask[/]")
    for f in findings:
        shown = f["placeholder"] or "(removed)"
        out.print(f"  [yellow]{f['kind']}[/] {escape(repr(f['found']))} → {escape(shown)}")


def gc(report: dict[str, Any]) -> None:
    items = report["archive"]
    verb = "archived" if report["applied"] else "would archive"
    out.print(f"{verb} {len(items)} memories unused for {report['archive_days']:g} days" + ("" if report["applied"] or not items else " (run with --apply)"))
    for item in items[:50]:
        out.print(f"  {item['id']}  [dim]last used {item['last_used'][:10]}[/]  {escape(item['content'][:80])}")


def consolidation(report: dict[str, Any]) -> None:
    groups = report["groups"]
    verb = "consolidated" if report["applied"] else "would consolidate"
    out.print(f"{verb} {len(groups)} groups in {escape(report['scope'])}" + ("" if report["applied"] or not groups else " (run with --apply)"))
    for g in groups:
        into = f" → {g['summary_id']} (undo: mnemo restore {g['summary_id']})" if g.get("summary_id") else ""
        out.print(f"  {len(g['sources'])} memories{into}")
        out.print(f"    summary: {escape(g['summary'][:300])}")
        if g.get("skipped"):
            out.print(f"    [yellow]skipped[/]: {escape(g['skipped'])}")
        elif g["archive"]:
            out.print(f"    {'archived' if report['applied'] else 'would archive'} {len(g['archive'])}: the summary carries all their facts")
        for k in g.get("keep", []):
            out.print(f"    [yellow]stays active[/] {k['id']}: the summary lacks {escape(', '.join(k['lost'][:8]))} — {escape(k['content'][:80])}")
