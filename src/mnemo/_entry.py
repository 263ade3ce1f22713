"""The whole ``mnemo`` command line: the CLI's commands plus the three that start another surface.

``mnemo mcp`` runs the MCP server, ``mnemo hook`` answers an assistant's hook, ``mnemo serve``
keeps the hooks' warm service, ``mnemo web`` serves the web app and ``mnemo proxy`` the memory
proxy for chat clients. Surfaces never import each other (the layer test checks it), so the
commands that launch one surface from the command line are wired here, one layer above all of them. The ``mnemo`` console script itself is :func:`mnemo.__main__.launch`, which sends
``mnemo hook …`` to the import-light hook client before any of this is imported.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ._cli import background as _background
from ._cli.base import OPERATIONS, CLIState, _render, command, main_group
from ._cli.commands import hoist_global_options
from ._cli.commands import main as _run

__all__ = ["OPERATIONS", "hoist_global_options", "main", "main_group"]


class _WarmService:
    """The hooks' warm service as the runner of a bulk write's background vectors
    (:mod:`mnemo._cli.background`): wired here because the CLI may not import another surface."""

    def running(self, db: str) -> bool:
        from ._hooks.client import service_running

        return service_running(db)

    def hand_over(self, db: str, idle_seconds: float, model: str | None) -> dict[str, Any]:
        from ._hooks.client import request, start_service

        reply = request(db, {"op": "fill"}, timeout=2.0)
        if reply and reply.get("ok"):
            return {"pid": reply.get("pid"), "started": False}
        start_service(db, idle_seconds, model=model)  # a service that starts looks for missing vectors
        return {"pid": None, "started": True}


_background.register(_WarmService())


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

    sys.exit(hook_main(event, db=state.overrides["db"], model=state.overrides.get("model"),
                       stdin=sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin))


@command("serve")
@click.option("--idle", type=float, help="Exit after this many seconds without a request (default: serve_idle_seconds).")
@click.option("--status", "show_status", is_flag=True, help="Only say whether a service serves this store.")
@click.option("--stop", "stop_it", is_flag=True, help="Ask the running service to stop.")
def serve_cmd(state: CLIState, idle: float | None, show_status: bool, stop_it: bool) -> None:
    """Keep the model and index warm for hooks (a local Unix socket; one per store; exits when idle).

    Between requests it also embeds what `import`/`ingest --vectors later` left without a vector."""
    from ._hooks import service as _serve

    db = state.config.db
    if show_status or stop_it:
        res = _serve.status(db) if show_status else _serve.stop(db)
        state.emit(res, lambda: _render.line(_service_line(res, show_status)))
        return
    idle_s = idle if idle is not None else state.config["serve_idle_seconds"]
    if idle_s <= 0:
        raise click.UsageError("--idle must be more than 0 seconds")
    from ._hooks.client import one_thread

    one_thread(state.config)
    from ._settings import door

    with state.open() as m:
        door.share(state.config, m)  # the commands it runs (op "cli") use this warm store
        every = None
        if state.config["sync_dir"]:
            folder, key = state.config["sync_dir"], state.key()
            every = (300.0, lambda: m.sync(folder, key=key))
        service = _serve.Service(m, db, idle_seconds=idle_s, cli=_warm_cli, every=every,
                                 idle_threads=state.config.origins.get("embed_threads") == "default")
        service.acquire()
        if not state.as_json:
            _render.err.print(f"serving {db} on {service.sock_path} (exits after {idle_s:g} s idle)")
        try:
            res = service.run()
        finally:
            door.unshare()
    state.emit(res, lambda: _render.line(f"served {res['served']} requests in {res['seconds']} s"))


@command("web")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; other than loopback needs TLS or --insecure-lan.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free one).")
@click.option("--no-browser", is_flag=True, help="Only print the login link; do not open a browser.")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="TLS certificate (PEM), to serve HTTPS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="TLS private key (PEM).")
@click.option("--insecure-lan", is_flag=True, help="Serve plain HTTP on a non-loopback address (a network you trust).")
@click.option("--token", "show_token", is_flag=True, help="Print the API token (Authorization: Bearer …) and exit.")
def web_cmd(state: CLIState, host: str, port: int, no_browser: bool, tls_cert: str | None, tls_key: str | None,
            insecure_lan: bool, show_token: bool) -> None:
    """Open the web app: search, browse, edit and review memories in a browser (a local server).

    Prints a one-time login link and opens it; the app is also an API (/api/v1, OpenAPI at
    /api/v1/openapi.json) for scripts with the --token. Ctrl-C stops the server."""
    from ._web import server

    if show_token:
        from ._settings.config import home
        from ._stores import store_identity
        from ._web.security import load_secret

        token = load_secret(home(), store_identity(state.config.db))
        state.emit({"token": token}, lambda: click.echo(token))
        return
    from ._settings.config import mnemo_version

    res = server.serve(state.config, host=host, port=port, tls_cert=tls_cert, tls_key=tls_key, insecure_lan=insecure_lan,
                       open_browser=not no_browser and not state.as_json, version=mnemo_version(),
                       say=(lambda line: _render.err.print(line, markup=False, highlight=False, soft_wrap=True)))
    if res.get("already_running"):
        state.emit(res, lambda: None)


@command("proxy", scope_option=True)
@click.argument("action", nargs=-1, metavar="[key add|list|remove [ID]]")
@click.option("--upstream", metavar="URL", help="The OpenAI-compatible API to forward to (default: the setting llm_base_url).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; other than loopback, every request needs a proxy key.")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True, help="Port (0: any free one).")
@click.option("--scope", help="Memory scope of requests without a proxy key (default: the current one); with `key add`, the key's scope.")
@click.option("--label", default="", help="With `key add`: a name for the key (which client has it).")
@click.option("--recall-budget", type=click.FloatRange(0.05, 30), default=2.0, show_default=True,
              help="Seconds recall may take before a request goes upstream without memories.")
@click.option("--no-capture", is_flag=True, help="Do not capture memories from the exchanges.")
def proxy_cmd(state: CLIState, action: tuple[str, ...], upstream: str | None, host: str, port: int, scope: str | None, label: str,
              recall_budget: float, no_capture: bool) -> None:
    """Serve an OpenAI-compatible API that adds your memories to every chat (any client, any upstream).

    Point Cherry Studio, ChatBox, Open WebUI or the openai SDK at http://127.0.0.1:8766/v1: each
    request gets the memories relevant to its latest message, is forwarded to the upstream, and the
    answer streams back unchanged; what the exchange states worth keeping is captured afterwards.
    `mnemo proxy key add --scope project:shop` makes a key that gives a client that scope."""
    if action:
        _proxy_keys(state, action, scope, label)
        return
    from ._proxy.server import serve

    res = serve(state.config, host=host, port=port, upstream=upstream, recall_seconds=recall_budget, capture=not no_capture,
                say=(lambda line: _render.err.print(line, markup=False, highlight=False, soft_wrap=True)))
    state.emit(res, lambda: _render.line(f"stopped; {res['captured']} memories captured from the exchanges"))


def _proxy_keys(state: CLIState, action: tuple[str, ...], scope: str | None, label: str) -> None:
    """``mnemo proxy key add|list|remove``: the proxy's client keys."""
    from ._settings import clients
    from ._settings.config import home

    verb = action[1] if len(action) > 1 and action[0] == "key" else None
    if verb == "add" and len(action) == 2:
        key, info = clients.add_key(home(), scope or state.config["scope"], label)
        state.emit({"key": key, "id": info.id, "scope": info.scope, "label": info.label},
                   lambda: click.echo(f"{key}\n(shown once) proxy key {info.id} for scope {info.scope}: give it to the client as its API key"))
    elif verb == "list" and len(action) == 2:
        rows = [vars(k) for k in clients.list_keys(home())]
        state.emit(rows, lambda: [click.echo(f"{k['id']}  {k['scope']}  {k['label'] or '-'}  {k['created'][:10]}") for k in rows]
                   if rows else click.echo("no proxy keys (mnemo proxy key add --scope SCOPE)"))
    elif verb == "remove" and len(action) == 3:
        gone = clients.remove_key(home(), action[2])
        state.emit(vars(gone), lambda: click.echo(f"removed proxy key {gone.id} ({gone.scope})"))
    else:
        raise click.UsageError("expected `mnemo proxy` alone, or `mnemo proxy key add --scope SCOPE`, `key list`, `key remove ID`")


def _service_line(res: dict[str, Any], status: bool) -> str:
    """`serve --status` / `--stop` in words."""
    if status:
        if res.get("running"):
            return f"a warm service serves {res['db']} (pid {res.get('pid')}, {res.get('served', 0)} requests answered)"
        return f"no service serves {res['db']} (the next hook starts one; `mnemo serve` starts one now)"
    return f"asked the service of {res['db']} to stop" if res.get("stopped") else f"no service was serving {res['db']}"


def _warm_cli(req: dict[str, Any]) -> dict[str, Any]:
    """Run one ``mnemo ARGV`` in the warm service, as the client process would have run it: its
    working folder, its settings (``MNEMO_*`` and the few other variables in ``_hooks.client.CLIENT_ENV``), its
    standard input and terminal width; the output and exit code go back to it. The store and
    the model are the service's own (lent by the front door when the settings agree)."""
    import contextlib
    import io
    import os
    import time

    from ._hooks.client import CLIENT_ENV

    argv = [str(a) for a in req.get("argv") or []]
    env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
    saved_env, saved_cwd, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    widths = (_render.out._width, _render.err._width)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        os.environ.clear()
        os.environ.update({k: v for k, v in saved_env.items() if not k.startswith("MNEMO_") and k not in CLIENT_ENV})
        os.environ.update(env)
        if os.environ.get("TZ") != saved_env.get("TZ"):
            time.tzset()
        os.chdir(str(req.get("cwd") or saved_cwd))
        # a text stream with a byte buffer beneath, as a real stdin has (`save -` reads the bytes)
        sys.stdin = io.TextIOWrapper(io.BytesIO(str(req.get("stdin") or "").encode("utf-8")), encoding="utf-8")
        if isinstance(req.get("columns"), int) and req["columns"] > 0:
            _render.out.width = _render.err.width = req["columns"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        tz_changed = os.environ.get("TZ") != saved_env.get("TZ")
        os.environ.clear()
        os.environ.update(saved_env)
        if tz_changed:
            time.tzset()
        sys.stdin = saved_stdin
        _render.out._width, _render.err._width = widths
    return {"stdout": out.getvalue(), "stderr": err.getvalue(), "exit": code}


def main(argv: list[str] | None = None) -> None:
    """Run the command line: library errors become one clear line and an exit code, never a traceback."""
    _run(argv)
