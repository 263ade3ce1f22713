"""CLI commands for `mnemo context`, `log`, `pause`, `resume`, `install`, `uninstall`: assistant integration.

(`mcp`, `hook` and `serve` start other surfaces, so they are wired in one layer up, in ``mnemo._entry``.)
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import MnemoError
from .base import OPERATIONS, CLIState, _render, command

OPERATIONS.update({"context": "context", "log": "log", "pause": "pause", "resume": "resume"})

_TARGETS = click.Choice(["claude-code", "opencode"])


@command("context", scope_option=True)
@click.argument("query", nargs=-1, required=True)
@click.option("--scope", help="Project scope (plus global); default: the current scope.")
@click.option("--budget-tokens", type=int, help="Token budget of the block (default: the context_budget_tokens setting).")
@click.option("--top-k", type=int, help="Most memories to include (default: the context_top_k setting).")
@click.option("--session", help="Assistant session id: a memory is injected at most once per session.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the block a model reads; json: the block's memories and reasons as JSON.")
@click.option("--explain", is_flag=True, help="Say why each memory was chosen.")
def context_cmd(state: CLIState, query: tuple[str, ...], scope: str | None, budget_tokens: int | None, top_k: int | None,
                session: str | None, fmt: str, explain: bool) -> None:
    """The memories relevant to QUERY, wrapped for a model's context (- reads QUERY from stdin)."""
    text = " ".join(query)
    if text == "-":
        text = sys.stdin.read()
    with state.open() as m:
        res = m.context(text, scope=scope, session=session, explain=explain,
                        budget_tokens=budget_tokens or state.config["context_budget_tokens"],
                        top_k=top_k or state.config["context_top_k"])
    if fmt == "json" and not state.as_json:
        state.as_json = True

    def show() -> None:
        if res["paused"]:
            _render.err.print("injection is paused (mnemo resume)")
        elif not res["text"]:
            _render.err.print("no relevant memories")
        else:
            click.echo(res["text"])
        if explain:
            for item in res["memories"]:
                _render.err.print(f"{item['id']}: {item['reason']} · {item['tokens']} tokens")

    state.emit(res, show)


@command("log")
@click.option("--session", help="Only this assistant session.")
@click.option("--since", help="Only injections at or after this time.")
@click.option("--limit", type=int, default=20, show_default=True)
def log_cmd(state: CLIState, session: str | None, since: str | None, limit: int) -> None:
    """What the assistant was told: every injection, when, which session, which memories and why."""
    with state.open() as m:
        rows = m.log(session=session, since=since, limit=limit)

    def show() -> None:
        if not rows:
            _render.line("nothing has been injected yet")
        for row in rows:
            where = f"session {row['session']}" if row["session"] else "no session"
            _render.line(f"{row['at']} · {row['surface']} · {where} · {len(row['memory_ids'])} memories")
            if row["query"]:
                _render.line(f"  for: {row['query'][:100]}")
            for mid in row["memory_ids"]:
                _render.line(f"  {mid}: {row['data'].get('reasons', {}).get(mid, '')}")

    state.emit(rows, show)


@command("pause")
@click.option("--session", help="Only this assistant session (default: every session).")
def pause_cmd(state: CLIState, session: str | None) -> None:
    """Stop injecting memories (one session, or all) until `mnemo resume`; MNEMO_DISABLE=1 does it per process."""
    with state.open() as m:
        res = m.pause(session)
    state.emit(res, lambda: _render.line(f"injection paused for {'session ' + session if session else 'every session'} (undo: mnemo resume)"))


@command("resume")
@click.option("--session", help="Only this assistant session (default: the pause for every session).")
def resume_cmd(state: CLIState, session: str | None) -> None:
    """Inject memories again after `mnemo pause`."""
    with state.open() as m:
        res = m.resume(session)
    state.emit(res, lambda: _render.line("injection resumed" + (" (still paused for every session)" if res["paused"] else "")))


@command("install")
@click.argument("target", type=_TARGETS)
@click.option("--project", "where", flag_value="project", help="This project's settings (default for opencode: global).")
@click.option("--user", "where", flag_value="user", default=True, help="Your user settings (the default).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), help="Project folder (default: the current folder).")
@click.option("--import-instructions", is_flag=True, help="Also save the project's CLAUDE.md / AGENTS.md as project_context memories.")
def install_cmd(state: CLIState, target: str, where: str, directory: str | None, import_instructions: bool) -> None:
    """Add mnemo's hooks and MCP server to Claude Code or OpenCode (backup first; idempotent)."""
    from . import install as _install

    # the store and model given here are the ones the assistant's hooks and MCP server use
    options = _install.store_options(state.overrides.get("db"), state.overrides.get("model"))
    report = _install.install(target, where=where, directory=directory, options=options)
    if import_instructions:
        report["imported"] = _import_instructions(state, directory)
    state.emit(report, lambda: _show_install(report))


@command("uninstall")
@click.argument("target", type=_TARGETS)
@click.option("--project", "where", flag_value="project", help="This project's settings.")
@click.option("--user", "where", flag_value="user", default=True, help="Your user settings (the default).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), help="Project folder (default: the current folder).")
def uninstall_cmd(state: CLIState, target: str, where: str, directory: str | None) -> None:
    """Remove what `mnemo install` added (the original file comes back byte for byte if nobody changed it since)."""
    from . import install as _install

    report = _install.uninstall(target, where=where, directory=directory)
    state.emit(report, lambda: _show_install(report))


def _show_install(report: dict[str, Any]) -> None:
    for f in report["files"]:
        _render.line(f"{f['action']}: {f['path']}" + (f" (backup {f['backup']})" if f.get("backup") else ""))
    for note in report.get("notes", []):
        _render.line(note)
    for item in report.get("imported", []):
        _render.line(f"imported {item}")


def _import_instructions(state: CLIState, directory: str | None) -> list[str]:
    """Ingest CLAUDE.md / AGENTS.md of the project as project_context memories."""
    import os

    from .._settings.scope import project_root, project_scope

    root = project_root(directory or os.getcwd())
    scope = project_scope(root)
    done = []
    with state.open(create=True) as m:
        for name in ("CLAUDE.md", "AGENTS.md"):
            path = root / name
            if not path.is_file():
                continue
            try:
                m.ingest([str(path)], scope=scope, type="project_context")
            except MnemoError as exc:  # e.g. a CLAUDE.md with a title and no body: the install itself succeeded
                done.append(f"{path}: skipped ({exc})")
                continue
            done.append(str(path))
    return done


@command("help")
@click.argument("topic", required=False)
def help_cmd(state: CLIState, topic: str | None) -> None:
    """Read the user guide here: `mnemo help` lists its sections, `mnemo help TOPIC` shows the one
    whose title contains TOPIC (e.g. `mnemo help assistant`, `mnemo help privacy`)."""
    sections = guide_sections()
    if not topic:
        titles = [title for title, _ in sections]
        state.emit({"sections": titles}, lambda: [_render.line(t) for t in titles])
        return
    want = topic.strip().lower()
    found = [(title, body) for title, body in sections if want in title.lower()]
    if not found:
        raise click.UsageError(f"no section of the guide is about {topic!r}; the sections: {', '.join(t for t, _ in sections)}")
    title, body = found[0]
    state.emit({"title": title, "text": body}, lambda: _render.out.print(f"## {title}\n\n{body}", markup=False, highlight=False))


def guide_sections() -> list[tuple[str, str]]:
    """The README that ships with this installation (its package description), as (title, text)
    per ``##`` section. The docs folder is not in a pip install; the README is, always the one of
    the installed version."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        md = metadata("mnemo")
        text = md.get_payload() or md.get("Description", "")  # type: ignore[attr-defined]
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        text = ""
    sections: list[tuple[str, str]] = []
    for block in str(text).split("\n## ")[1:]:
        title, _, body = block.partition("\n")
        sections.append((title.strip(), body.strip()))
    return sections
