"""The whole ``mnemo`` command line: the CLI's commands plus the three that start another surface.

``mnemo mcp`` runs the MCP server, ``mnemo hook`` answers an assistant's hook and ``mnemo serve``
keeps the hooks' warm service. Surfaces never import each other (the layer test checks it), so
the commands that launch one surface from the command line are wired here, one layer above all
of them. The ``mnemo`` console script itself is :func:`mnemo.__main__.launch`, which sends
``mnemo hook …`` to the import-light hook client before any of this is imported.
"""

from __future__ import annotations

import sys

import click

from ._cli.base import OPERATIONS, CLIState, _render, command, main_group
from ._cli.commands import hoist_global_options
from ._cli.commands import main as _run

__all__ = ["OPERATIONS", "hoist_global_options", "main", "main_group"]


@command("mcp")
def mcp_cmd(state: CLIState) -> None:
    """Run the MCP server on stdio (for Claude Code, OpenCode or any MCP client)."""
    from ._mcp.server import run_stdio

    run_stdio(state.config)


@command("hook")
@click.argument("event", metavar="EVENT")
def hook_cmd(state: CLIState, event: str) -> None:
    """Handle a Claude Code hook: the event's JSON payload on stdin, Claude Code's hook answer on stdout.

    EVENT is session-start, user-prompt, pre-compact, stop or session-end. Errors exit 1 (never 2,
    which would block the user's prompt); MNEMO_DISABLE=1 makes it do nothing."""
    from ._hooks.client import hook_main

    sys.exit(hook_main(event, db=state.overrides["db"], stdin=sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin))


@command("serve")
@click.option("--idle", type=float, help="Exit after this many seconds without a request (default: serve_idle_seconds).")
@click.option("--status", "show_status", is_flag=True, help="Only say whether a service serves this store.")
@click.option("--stop", "stop_it", is_flag=True, help="Ask the running service to stop.")
def serve_cmd(state: CLIState, idle: float | None, show_status: bool, stop_it: bool) -> None:
    """Keep the model and index warm for hooks (a local Unix socket; one per store; exits when idle)."""
    from ._hooks import service as _serve

    db = state.config.db
    if show_status or stop_it:
        res = _serve.status(db) if show_status else _serve.stop(db)
        state.emit(res, lambda: _render.line(str(res)))
        return
    idle_s = idle if idle is not None else state.config["serve_idle_seconds"]
    if idle_s <= 0:
        raise click.UsageError("--idle must be more than 0 seconds")
    from ._hooks.client import one_thread

    one_thread(state.config)
    with state.open() as m:
        service = _serve.Service(m, db, idle_seconds=idle_s)
        service.acquire()
        if not state.as_json:
            _render.err.print(f"serving {db} on {service.sock_path} (exits after {idle_s:g} s idle)")
        res = service.run()
    state.emit(res, lambda: _render.line(f"served {res['served']} requests in {res['seconds']} s"))


def main(argv: list[str] | None = None) -> None:
    """Run the command line: library errors become one clear line and an exit code, never a traceback."""
    _run(argv)
