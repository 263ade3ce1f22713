"""Running ``mnemo web``: the store through the front door, a login link, uvicorn.

One server per store: a second ``mnemo web`` on a store that already has one prints (and opens)
a fresh login link for it instead of starting another. The running server is recorded in
``<home>/web/<store>.json`` (pid, host, port, TLS). Loopback is the default; any other address
needs TLS (``--tls-cert``/``--tls-key``) or an explicit ``--insecure-lan``, and prints a QR code
of the login link for a phone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.models import MEMORY_TYPES
from .._settings.listen import base_url, bind, is_loopback
from ..errors import InvalidInputError
from . import security

if TYPE_CHECKING:
    from .._settings.config import Config

DEFAULT_PORT = 8765
#: settings whose values may hold a password (a PostgreSQL URL, an endpoint with user:pass@)
_URL_PASSWORD = re.compile(r"(://[^/:@\s]+:)[^@/\s]+@")


def _state_file(home: Path, store_id: str) -> Path:
    return security.secret_path(home, store_id).with_suffix(".json")


def running(home: Path, store_id: str) -> dict[str, Any] | None:
    """The server recorded for this store, if its process is alive and its port answers."""
    try:
        state = json.loads(_state_file(home, store_id).read_text("utf-8"))
        os.kill(int(state["pid"]), 0)
        with socket.create_connection((state["connect"], int(state["port"])), timeout=0.5):
            return state
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lan_address() -> str | None:
    """This machine's address on the local network (the one a route outwards would use), for a
    phone's link when the server listens on every address; no packet is sent."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: a route lookup only
        return str(s.getsockname()[0])
    return None


def qr_text(url: str) -> str:
    """A QR code of ``url`` drawn with block characters, for a phone's camera."""
    import io

    import segno

    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True)
    return out.getvalue()


def settings_rows(config: "Config") -> list[dict[str, Any]]:
    """The effective settings as ``mnemo config`` lists them, with any password in a URL masked."""
    from .._settings import config as _config

    rows = []
    for s in _config.SETTINGS:
        value = config.db if s.name == "db" else config[s.name]
        if isinstance(value, str):
            value = _URL_PASSWORD.sub(r"\1***@", value)
        rows.append({"name": s.name, "value": value, "origin": config.origins[s.name], "help": s.help})
    return rows


def serve(config: "Config", *, host: str, port: int, tls_cert: str | None, tls_key: str | None, insecure_lan: bool,
          open_browser: bool, say: Callable[[str], None], version: str) -> dict[str, Any]:
    """Serve the store the settings name until interrupted; returns what was served.

    ``say`` prints a line for the person (the login link, where the server listens)."""
    import uvicorn

    from .._settings import door
    from .._settings.config import home as mnemo_home
    from .._stores import store_identity
    from .app import WebApp, log_to_stderr

    tls = bool(tls_cert or tls_key)
    if tls and not (tls_cert and tls_key):
        raise InvalidInputError("--tls-cert and --tls-key go together")
    if not is_loopback(host) and not tls and not insecure_lan:
        raise InvalidInputError(f"--host {host} lets other machines reach your memory: give --tls-cert and --tls-key, "
                                "or --insecure-lan to serve plain HTTP on a network you trust")
    home = mnemo_home()
    store_id = store_identity(config.db)
    secret = security.load_secret(home, store_id)
    assert secret is not None
    other = running(home, store_id)
    if other is not None:
        url = f"{other['url']}/login?t={security.login_token(secret)}"
        say(f"mnemo web already serves this store (pid {other['pid']}); a fresh login link:\n  {url}")
        _open(url, open_browser)
        return {"already_running": True, "url": other["url"], "login_url": url, "pid": other["pid"]}
    try:
        listener = bind(host, port)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); another program uses it? "
                                "choose another with --port") from None
    port = listener.getsockname()[1]  # --port 0: the one the system chose
    gate = security.Gate(secret, store_id, port, tls=tls)
    stack = contextlib.ExitStack()
    stack.callback(listener.close)
    with stack:
        m = stack.enter_context(door.opened(config, create=True, notice=say))
        serving = door.Serving(lambda: m, scope=config["scope"], idle_after=2.0)
        info = {"version": version, "store": _URL_PASSWORD.sub(r"\1***@", config.db), "scope": config["scope"],
                "scope_why": config.origins.get("scope"), "types": list(MEMORY_TYPES), "read_only": bool(config["read_only"]),
                "model": config["model"]}
        app = WebApp(serving, gate, uploads=home / "uploads", info=info, settings=settings_rows(config), version=version)
        log_to_stderr()
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off", access_log=False,
                                               ssl_certfile=tls_cert, ssl_keyfile=tls_key, server_header=False))
        url = base_url(host, port, tls)
        if not is_loopback(host) and host in ("0.0.0.0", "::"):
            url_lan = base_url(lan_address() or "127.0.0.1", port, tls)
        else:
            url_lan = url
        state = _state_file(home, store_id)
        state.write_text(json.dumps({"pid": os.getpid(), "url": url, "connect": "127.0.0.1" if host in ("0.0.0.0", "::") else host.strip("[]"),
                                     "port": port}), "utf-8")
        stack.callback(lambda: state.unlink(missing_ok=True))
        login = f"{url_lan}/login?t={security.login_token(secret)}"
        say(f"mnemo web serves {info['store']} at {url_lan} (scope {config['scope']}); Ctrl-C stops it")
        say(f"open (one-time login link):\n  {login}")
        if url_lan != url or not is_loopback(host):
            say("scan it with a phone on the same network:\n" + qr_text(login))
        _open(login, open_browser)
        server.run(sockets=[listener])
    return {"url": url, "served": True}


def _open(url: str, wanted: bool) -> None:
    if wanted:
        import webbrowser

        with contextlib.suppress(Exception):  # no browser on this machine: the link is printed
            webbrowser.open(url)
