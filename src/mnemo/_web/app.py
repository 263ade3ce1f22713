"""``mnemo web``: the ASGI app (Starlette) and the server that runs it (uvicorn).

Starlette and uvicorn are already in mnemo's dependency tree through the ``mcp`` SDK, so the web
app adds no server stack of its own; the pages are a framework-free single-page app in
``static/`` (no build step, nothing fetched from elsewhere). The app is three things:

* the API (``api.ROUTES``) under ``/api/v1``, each route a worker-thread call on the store the
  front door opened (one call at a time, ``door.Serving``);
* the app shell and its files (``/``, ``/static/…``, ``/sw.js``, ``/manifest.webmanifest``),
  served to anyone who can reach the port: they hold no data;
* ``/login?t=…``, which turns a one-time link into the session cookie.

``security.Gate`` checks every request (Host always; credentials on the API; Origin on every
request that changes something) and every response carries ``security.HEADERS``.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import sys
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .._settings.listen import read_body
from ..errors import InvalidInputError, MnemoError, NotFoundError, StoreError
from . import api
from .security import HEADERS, Gate

if TYPE_CHECKING:
    from .._core.mnemo import Mnemo
    from .._settings.door import Serving

log = logging.getLogger("mnemo.web")
STATIC = files("mnemo") / "_web" / "static"
#: root-level files (a service worker controls only the paths under its own)
ROOT_FILES = {"/sw.js": "sw.js", "/manifest.webmanifest": "manifest.webmanifest", "/favicon.ico": "icon.svg"}
_SAFE = ("GET", "HEAD", "OPTIONS")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _status_of(exc: MnemoError) -> int:
    """The HTTP status of a mnemo error: a bad request, no such memory, or a store that cannot serve."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, InvalidInputError):
        return 400
    if isinstance(exc, StoreError):
        return 503
    return 422


class WebApp:
    """The ASGI application of one store."""

    def __init__(self, serving: "Serving", gate: Gate, *, uploads: Path, info: dict[str, Any],
                 settings: list[dict[str, Any]], version: str) -> None:
        self.serving = serving
        self.gate = gate
        self.uploads = uploads
        self.info = info
        self.settings = settings
        self.version = version
        self._routes = [(r, r.path.strip("/").split("/")) for r in api.ROUTES]
        self._openapi = json.dumps(api.openapi(version), ensure_ascii=False).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # uvicorn runs it with lifespan off: only HTTP comes
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method, path = scope["method"], scope["path"]
        if not self.gate.host_ok(headers.get("host")):
            await _send_error(send, 403, "ForbiddenHost", "this server answers only to localhost or an IP address (DNS rebinding guard)")
            return
        if path.startswith("/api/"):
            await self._api(scope, receive, send, headers)
        elif path == "/login":
            await self._login(scope, send)
        elif method not in ("GET", "HEAD"):
            await _send_error(send, 405, "MethodNotAllowed", f"{method} is not allowed here")
        else:
            await self._file(path, send, head=method == "HEAD")

    # ------------------------------------------------------------ the API

    async def _api(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]) -> None:
        import anyio.to_thread

        method, path = scope["method"], scope["path"]
        how = self.gate.authorised(headers, _cookies(headers.get("cookie", "")))
        if how is None:
            await _send_error(send, 401, "Unauthorized", "not logged in: open the link `mnemo web` printed, or send Authorization: Bearer <token>")
            return
        if method not in _SAFE and not self.gate.origin_ok(headers.get("origin"), headers["host"], how, headers.get("sec-fetch-site")):
            await _send_error(send, 403, "ForbiddenOrigin", "a request that changes the store must come from this app's own page")
            return
        if path == "/api/v1/openapi.json" and method == "GET":
            await _send(send, 200, self._openapi, "application/json")
            return
        route, params = self._match(method, path.removeprefix("/api/v1"))
        if route is None:
            status = 405 if params is not None else 404
            await _send_error(send, status, "NotFound" if status == 404 else "MethodNotAllowed",
                              f"no API route {method} {path}" if status == 404 else f"{method} is not allowed on {path}")
            return
        limit = api.MAX_UPLOAD_BYTES if route.upload else api.MAX_JSON_BYTES
        body = await read_body(receive, headers, limit)
        if body is None:
            await _send_error(send, 413, "TooLarge", f"the request body is over {limit // (1024 * 1024)} MB")
            return
        try:
            query = parse_qs(scope.get("query_string", b"").decode("utf-8", "strict"), keep_blank_values=True)
            args = api.arguments(route, query, None if route.upload else api.parse_json(body), params or {})
            ctx = api.Context(body=body if route.upload else b"", uploads=self.uploads, settings=self.settings, info=self.info)
            result = await anyio.to_thread.run_sync(self.serving.call, self._run, route, args, ctx)
        except UnicodeDecodeError:
            await _send_error(send, 400, "InvalidInputError", "the query string is not UTF-8")
        except MnemoError as exc:
            await _send_error(send, _status_of(exc), type(exc).__name__, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except Exception:  # a bug: the person gets one line, the server's log the traceback
            log.exception("internal error in %s %s", method, path)
            await _send_error(send, 500, "InternalError", "internal error (the server's log has the details)")
        else:
            if isinstance(result, dict) and result.get("vectors_pending"):
                self.serving.fill_later()  # an upload's chunks: embedded after the answer, a few at a time
            await _send(send, route.status, json.dumps(result, ensure_ascii=False, default=str).encode(), "application/json")

    def _run(self, route: api.Route, args: dict[str, Any], ctx: api.Context) -> Any:
        m: Mnemo = self.serving.mnemo()
        return route.handler(m, args, ctx)

    def _match(self, method: str, path: str) -> tuple[api.Route | None, dict[str, str] | None]:
        """The route for ``method path`` and its path parameters; (None, {}) when the path exists
        under another method, (None, None) when it does not exist at all."""
        parts = path.strip("/").split("/")
        other = None
        for route, pattern in self._routes:
            if len(pattern) != len(parts):
                continue
            found: dict[str, str] = {}
            for want, got in zip(pattern, parts):
                if want.startswith("{"):
                    if not got:
                        break
                    from urllib.parse import unquote

                    found[want.strip("{}")] = unquote(got)
                elif want != got:
                    break
            else:
                if route.method == method:
                    return route, found
                other = {}
        return None, other

    # ------------------------------------------------------------ login and files

    async def _login(self, scope: Scope, send: Send) -> None:
        token = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("t") or [""])[0]
        if not self.gate.redeem(token):
            page = ("<!doctype html><meta charset=utf-8><title>mnemo</title><p>This login link is expired or was used already. "
                    "Run <code>mnemo web</code> again for a fresh one.</p>").encode()
            await _send(send, 401, page, "text/html; charset=utf-8")
            return
        await send({"type": "http.response.start", "status": 303, "headers": _headers(
            [(b"location", b"/"), (b"set-cookie", self.gate.session_cookie().encode()), (b"cache-control", b"no-store")])})
        await send({"type": "http.response.body", "body": b""})

    async def _file(self, path: str, send: Send, *, head: bool) -> None:
        name = ROOT_FILES.get(path) or ("index.html" if path in ("/", "/index.html") else None)
        if name is None and path.startswith("/static/"):
            name = path.removeprefix("/static/")
        target = STATIC / name if name and _plain(name) else None
        if target is None or not target.is_file():
            await _send_error(send, 404, "NotFound", f"no page {path}")
            return
        data = target.read_bytes()
        kind = {"webmanifest": "application/manifest+json", "js": "text/javascript; charset=utf-8",
                "css": "text/css; charset=utf-8", "html": "text/html; charset=utf-8", "svg": "image/svg+xml"}.get(
            name.rsplit(".", 1)[-1], mimetypes.guess_type(name)[0] or "application/octet-stream")
        # the shell and the service worker are checked on every load (a new mnemo ships new files)
        cache = b"no-cache"
        extra = [(b"service-worker-allowed", b"/")] if name == "sw.js" else []
        await _send(send, 200, b"" if head else data, kind, cache=cache, extra=extra, length=len(data))


def _plain(name: str) -> bool:
    """A file name inside ``static/`` with no way out of it."""
    return all(part and part not in (".", "..") and not part.startswith(".") for part in name.split("/")) and "\\" not in name


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        k, _, v = part.strip().partition("=")
        if k:
            out[k] = v
    return out


def _headers(extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in HEADERS.items()] + extra


async def _send(send: Send, status: int, body: bytes, kind: str, *, cache: bytes = b"no-store",
                extra: list[tuple[bytes, bytes]] | None = None, length: int | None = None) -> None:
    headers = _headers([(b"content-type", kind.encode()), (b"content-length", str(len(body) if length is None else length).encode()),
                        (b"cache-control", cache), *(extra or [])])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _send_error(send: Send, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False).encode()
    await _send(send, status, body, "application/json")


def log_to_stderr() -> None:
    """The server's own log (a bug's traceback) on stderr, once."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s mnemo web: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
