"""CLI commands for `mnemo ingest`, `sources`, `watch`: documents, chat exports, web pages."""

from __future__ import annotations

import json
from typing import Any

import click

from . import background
from .base import OPERATIONS, CLIState, _render, command  # noqa: F401

OPERATIONS.update({"ingest": "ingest", "sources": "sources", "watch": "watch"})


def _ingest_options(state: CLIState, chunk_chars: int | None, max_bytes: int | None, tags: str | None, mtype: str,
                    include: tuple[str, ...], exclude: tuple[str, ...]) -> dict[str, Any]:
    return dict(
        chunk_chars=chunk_chars if chunk_chars is not None else state.config["chunk_chars"],
        max_bytes=max_bytes if max_bytes is not None else state.config["ingest_max_bytes"],
        tags=tags, type=mtype, include=include, exclude=exclude,
    )


@command("ingest", scope_option=True)
@click.argument("targets", nargs=-1, required=True)
@click.option("--include", multiple=True, metavar="GLOB", help="Only files matching this glob (path or name; repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out files and folders matching this glob (repeatable).")
@click.option("--chunk-chars", type=int, help="About how many characters per chunk (default: the chunk_chars setting, 512).")
@click.option("--sync", is_flag=True, help="Also archive the chunks of files deleted from the folders given.")
@click.option("--scope", help="Scope for the chunks (default: MNEMO_SCOPE / config / global).")
@click.option("--tags", help="Comma-separated tags for every chunk.")
@click.option("--type", "mtype", default="note", show_default=True, help="Memory type (e.g. project_context for CLAUDE.md / AGENTS.md).")
@click.option("--max-bytes", type=int, help="Skip files and pages larger than this (default: ingest_max_bytes, 20 MB).")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Web pages: seconds for the connection and any one read.")
@click.option("--deadline", type=float, default=30.0, show_default=True, help="Web pages: seconds for the whole fetch.")
@click.option("--no-capture", is_flag=True, help="Chat exports: do not run the capture rules over the messages.")
@background.vectors_option
def ingest_cmd(state: CLIState, targets: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...],
               chunk_chars: int | None, sync: bool, scope: str | None, tags: str | None, mtype: str, max_bytes: int | None,
               timeout: float, deadline: float, no_capture: bool, vectors: str) -> None:
    """Ingest files, folders (recursively), chat exports and web pages (http/https URLs).

    Markdown and text are chunked along headings, paragraphs and sentences; WeChat text exports,
    ChatGPT's conversations.json and JSON/JSONL chat logs become dated notes; a page's main text
    is extracted. Re-running is incremental: unchanged files are skipped, changed ones replace
    their chunks (the old ones are superseded), renamed ones are recognised. Bad files are
    reported and the rest goes on."""
    opts = _ingest_options(state, chunk_chars, max_bytes, tags, mtype, include, exclude)
    with state.open(create=True) as m, _render.progress("ingesting", enabled=not state.as_json) as tick:
        report = m.ingest(list(targets), scope=scope, sync=sync, web_timeout=timeout, web_deadline=deadline,
                          capture=not no_capture, progress=tick, vectors=background.mode(state, vectors), **opts)
    background.hand_over(state, report)
    state.emit(report, lambda: _summary(report))


def _summary(report: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = _render.out
    changed = [s for s in report["sources"] if s["action"] != "unchanged"]
    if changed:
        table = Table(box=None, show_header=True, header_style="bold")
        for col in ("action", "chunks", "source"):
            table.add_column(col)
        for s in changed[:50]:
            table.add_row(s["action"], str(s["chunks"]), escape(s["key"]))
        out.print(table)
        if len(changed) > 50:
            out.print(f"[dim]… and {len(changed) - 50} more[/]")
    t = report["timings"]
    out.print(
        f"{report['files_seen']} seen · {report['ingested']} ingested · {report['unchanged']} unchanged · "
        f"{report['renamed']} renamed · {len(report['skipped'])} skipped · {report['chunks']} new chunks · "
        f"{report['superseded']} superseded · {report['archived']} archived "
        f"[dim](read {t['read']:.1f}s, chunk {t['chunk']:.1f}s, embed {t['embed']:.1f}s, store {t['store']:.1f}s)[/]")
    counts = report.get("skipped_counts", {})
    quiet = {"hidden", "not included", "excluded", "unsupported file type"}
    if counts:
        out.print("skipped: " + ", ".join(f"{n} {escape(reason)}" for reason, n in counts.items() if reason in quiet)
                  if any(r in quiet for r in counts) else "skipped:")
    for s in report["skipped"]:
        if s["reason"] not in quiet:
            out.print(f"  [yellow]{escape(s['path'])}[/]: {escape(s['reason'])}")
    pending = background.pending_line(report)
    if pending:
        out.print(f"[dim]{escape(pending)}[/]")
    for w in report.get("warnings", []):
        _render.err.print(f"warning: {escape(w)}")


@command("sources")
@click.option("--kind", type=click.Choice(["file", "url", "chat"]), help="Only this kind of source.")
@click.option("--status", type=click.Choice(["active", "deleted"]), help="Only active or deleted (synced away) sources.")
@click.option("--prefix", help="Only sources whose key starts with this (e.g. file:/home/me/notes).")
@click.option("--forget", "forget_key", metavar="KEY", help="Stop remembering this source: archive its chunks (each restorable).")
def sources_cmd(state: CLIState, kind: str | None, status: str | None, prefix: str | None, forget_key: str | None) -> None:
    """List what was ingested: each document, when, and how many chunks (--forget KEY removes one)."""
    if forget_key is not None:
        with state.open() as m:
            res = m.forget_source(forget_key)
        state.emit(res, lambda: _render.line(f"archived {res['archived']} chunks of {res['source']} (mnemo restore ID brings one back)"))
        return
    with state.open() as m:
        rows = m.sources(kind=kind, status=status, prefix=prefix)
    state.emit(rows, lambda: _sources_table(rows))


def _sources_table(rows: list[dict[str, Any]]) -> None:
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        _render.out.print("nothing ingested yet (mnemo ingest PATH|URL)")
        return
    wide = _render.out.width >= 140
    date_w = 16 if wide else 10
    # chunks (6), status (8: "archived"), the dates, and two spaces after every column but the last
    fixed = 6 + 8 + date_w * (2 if wide else 1) + 2 * (5 if wide else 4)
    room = max(30, _render.out.width - fixed)
    source_w = max(20, room * 3 // 5)
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("source", no_wrap=True, min_width=source_w, max_width=source_w)
    table.add_column("title", no_wrap=True, overflow="ellipsis", max_width=max(10, room - source_w))
    table.add_column("chunks", no_wrap=True, min_width=6)
    table.add_column("status", no_wrap=True, min_width=8)
    for col in (("ingested",) if wide else ()) + ("updated",):
        table.add_column(col, no_wrap=True, min_width=date_w)
    for r in rows:
        dates = ([(r["ingested_at"] or "")[:date_w]] if wide else []) + [(r["updated_at"] or "")[:date_w]]
        table.add_row(escape(_left_cut(r["key"], source_w)), escape(r["title"] or ""), str(r["chunks"]), r["status"], *dates)
    _render.out.print(table)


def _left_cut(text: str, width: int) -> str:
    """``text`` that fits ``width`` cells, cut at its start: of a path, the file name and the
    folders nearest to it are what tells two sources apart."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    kept = ""
    for ch in reversed(text):
        if cell_len(kept) + cell_len(ch) + 1 > width:
            break
        kept = ch + kept
    return "…" + kept


@command("watch", scope_option=True)
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--move-processed", is_flag=True, help="Move each ingested file into processed/ inside the folder.")
@click.option("--debounce", type=float, default=0.5, show_default=True, help="Seconds a file must be quiet before it is ingested.")
@click.option("--scope", help="Scope for the chunks.")
@click.option("--tags", help="Comma-separated tags for every chunk.")
@click.option("--chunk-chars", type=int, help="About how many characters per chunk.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out files matching this glob (repeatable).")
def watch_cmd(state: CLIState, folder: str, move_processed: bool, debounce: float, scope: str | None, tags: str | None,
              chunk_chars: int | None, exclude: tuple[str, ...]) -> None:
    """Watch FOLDER (an inbox) and ingest files as they appear or change, until Ctrl-C.

    Files already there are ingested first (unchanged ones are skipped, so a restart does not
    ingest twice); a bad file is reported and watching goes on; a file or folder deleted from
    FOLDER has its chunks archived (as ingest --sync does). With --json, one JSON line per
    processed file, then the totals."""
    opts = _ingest_options(state, chunk_chars, None, tags, "note", (), exclude)

    def show(entry: dict[str, Any]) -> None:
        if state.as_json:
            click.echo(json.dumps(entry, ensure_ascii=False), nl=True)
        elif "error" in entry:
            _render.err.print(f"[yellow]{entry['path']}[/]: {entry['error']}")
        else:
            moved = f" → {entry['moved_to']}" if entry.get("moved_to") else ""
            _render.line(f"{entry['action']}: {entry['path']} ({entry['chunks']} chunks){moved}")

    with state.open(create=True) as m:
        if not state.as_json:
            _render.err.print(f"watching {folder} (Ctrl-C to stop)")
        report = m.watch(folder, debounce=debounce, move_processed=move_processed, on_result=show, scope=scope, **opts)
    state.emit(report, lambda: _render.line(
        f"stopped: {report['processed']} processed, {report['unchanged']} unchanged, {report['archived']} chunks archived, "
        f"{report['errors']} errors"))
