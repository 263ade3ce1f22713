"""CLI commands for `mnemo auto`: detect memories in conversation."""

from __future__ import annotations

import sys
from typing import Any

import click

from .._capture.transcript import FORMATS
from .base import OPERATIONS, CLIState, _render, command  # noqa: F401

OPERATIONS.update({"auto": "auto"})


@command("auto", scope_option=True)
@click.argument("text", nargs=-1)
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the message or conversation from standard input.")
@click.option("--file", "file", type=click.Path(dir_okay=False), help="Read a transcript file; only what was added since the last run is read.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="Input format: plain text, a JSON list of {role, content} messages, a Claude Code JSONL transcript.")
@click.option("--role", type=click.Choice(["user", "assistant"]), help="Who said plain TEXT (default: the user).")
@click.option("--dry-run", is_flag=True, help="Show what would be saved (type, confidence, text); save nothing.")
@click.option("--llm/--rules", "llm", default=None, help="Extract with the configured LLM endpoint, or with the rules (default: the capture_llm setting).")
@click.option("--scope", help="Scope for the memories (default: MNEMO_SCOPE / config / global).")
@click.option("--session", help="Session id recorded as the memories' source_session.")
@click.option("--background", is_flag=True, help="With --file: extract in a detached worker and return at once.")
@click.option("--status", is_flag=True, help="With --file: show the state of its extraction job (running, done, failed; lines read).")
@click.option("--worker", is_flag=True, hidden=True)
def auto_cmd(state: CLIState, text: tuple[str, ...], from_stdin: bool, file: str | None, fmt: str, role: str | None, dry_run: bool,
             llm: bool | None, scope: str | None, session: str | None, background: bool, status: bool, worker: bool) -> None:
    """Detect the memories in TEXT (or --stdin, or --file) and save them.

    Preferences, project context, decisions, constraints, goals, feedback, workflows and entities
    are found by rules for Chinese and English, checked by a small bundled model (no network);
    chit-chat, questions and one-off requests are not saved; "记住…" / "remember that…" / "from now on…" save with high importance.
    With --llm the configured chat endpoint extracts them instead, within the daily budgets
    (llm_max_calls_per_day, llm_max_tokens_per_day); when it cannot, the rules are used and the
    reason is shown. Memories from the assistant's own words get a lower confidence."""
    sources = sum([bool(text), from_stdin, file is not None])
    if sources != 1:
        raise click.UsageError("give exactly one of TEXT, --stdin or --file")
    if (background or status) and file is None:
        raise click.UsageError("--background and --status need --file (a transcript file)")
    if status:
        with state.open() as m:
            job = m.capture_job(file)  # type: ignore[arg-type]
        state.emit({"job": job}, lambda: _render.line(
            "no extraction of this file yet" if job is None else
            f"{job['state']} · {job['progress'].get('lines', 0)} lines read · updated {job['updated_at']}"
            + (f" · error: {job['progress']['error']}" if job["progress"].get("error") else "")))
        return
    c = state.config
    use_llm = c["capture_llm"] if llm is None else llm
    with state.open(create=True) as m:
        if file is not None:
            result = m.auto_transcript(file, session=session, scope=scope, llm=use_llm, background=background, fmt=fmt, dry_run=dry_run)
        else:
            content = _stdin_text() if from_stdin else " ".join(text)
            if fmt != "auto":
                from .._capture.transcript import parse

                content = parse(content, fmt, role=role or "user")  # type: ignore[assignment]
                content = [{"role": msg.role, "content": msg.text} for msg in content]  # type: ignore[attr-defined,assignment]
            result = m.auto(content, scope=scope, dry_run=dry_run, llm=use_llm, session=session, source_role=role if fmt == "auto" else None)
    if worker:
        return  # a detached worker reports through the job row, not to a terminal
    state.emit(result, lambda: _show(result))


def _show(result: dict[str, Any]) -> None:
    from rich.markup import escape

    out = _render.out
    if result.get("background"):
        if result["started"]:
            out.print(f"extracting in the background (pid {result['pid']}); `mnemo auto --file … --dry-run` shows what is pending")
        else:
            out.print(escape(result["reason"]))
        return
    if result.get("skipped"):
        out.print(escape(result["skipped"]))
        return
    if result.get("fallback"):
        _render.err.print(f"note: {escape(result['fallback'])}")
    if result["dry_run"]:
        found = result["detected"]
        out.print(f"would save {len(found)} {'memory' if len(found) == 1 else 'memories'} ({result['extractor']}; nothing saved)")
        for d in found:
            who = " [dim](assistant)[/]" if d["speaker"] == "assistant" else ""
            out.print(f"  {d['type']:<16} {d['confidence']:.2f}  {escape(d['content'])}{who}")
        return
    counts = result["counts"]
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing worth remembering"
    out.print(f"{summary} ({result['extractor']})")
    for s in result["saved"]:
        out.print(f"  {s['action']:<10} {s['id']}  {s['type']:<16} {escape(s['content'])}")


def _stdin_text() -> str:
    """Standard input as text; bytes that are not UTF-8 are refused, as `save -` refuses them,
    rather than stored as U+FFFD (what was meant is lost, and a masked secret could hide there)."""
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"standard input is not valid UTF-8 text (byte {exc.start}); convert it first (iconv -t UTF-8)") from None
