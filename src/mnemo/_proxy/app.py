"""``mnemo proxy``: an OpenAI-compatible server in front of any upstream, that gives every chat
client the user's memory.

For ``POST /v1/chat/completions`` it recalls for the latest user turn (``Mnemo.context``, within
a time budget), puts the block into the conversation as a system message after the client's own
system prompt (``with_memory``), forwards the request and streams the upstream's answer back
as it arrives, byte for byte (SSE events, tool calls, usage, status and error bodies
included). When the answer is complete, the exchange is queued for capture
(``Mnemo.queue_capture``) and a background thread captures it. Every other ``/v1/…`` request
(``/v1/models``, ``/v1/embeddings``…) is passed through unchanged.

Never in the way: recall that fails or is slower than its budget sends the request on without
memories; an upstream error comes back as the upstream sent it; an unreachable upstream is one
OpenAI-style error (502). The upstream call runs in a worker thread on the standard library's
``http.client``, feeding the client through a memory stream, so twenty streams at once are
twenty threads and no reply can meet another's bytes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._llm.stream import last_user_text, reply_text, with_memory
from .._settings import clients
from .._settings.listen import host_header_ok, read_body
from ..errors import MnemoError

if TYPE_CHECKING:
    from .._settings.door import Serving

log = logging.getLogger("mnemo.proxy")
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: headers that belong to one connection, never forwarded either way
HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
                 "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding"})
#: the largest request body taken (a long conversation with images is a few MB)
MAX_BODY = 32 * 1024 * 1024


@dataclass
class Settings:
    """What one proxy serves: where it forwards, with which key, and how memory is added."""

    upstream: str
    upstream_key: str = ""
    scope: str = "global"
    budget_tokens: int = 400
    top_k: int = 5
    recall_seconds: float = 2.0
    capture: bool = True
    capture_llm: bool = False
    require_key: bool = False
    port: int = 0
    home: Path = field(default_factory=Path)
    timeout: float = 300.0


class ProxyApp:
    """The ASGI application of ``mnemo proxy``."""

    def __init__(self, serving: "Serving", settings: Settings) -> None:
        self.serving = serving
        self.s = settings
        self.queue = settings.home / "capture-queue"
        self._keys: tuple[float, list[clients.ClientKey], dict[str, str]] = (-1.0, [], {})
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.captured = 0
        self._worker = threading.Thread(target=self._capture_loop, name="mnemo-proxy-capture", daemon=True)

    # ------------------------------------------------------------ the capture thread

    def start(self) -> None:
        """Start capturing in the background (queued exchanges left by an earlier run first)."""
        self._worker.start()
        self._wake.set()

    def stop(self, wait: float = 30.0) -> None:
        """Capture what is queued, then stop the thread (what is left stays queued on disk)."""
        self._stop.set()
        self._wake.set()
        self._worker.join(timeout=wait)

    def _capture_loop(self) -> None:
        while True:
            self._wake.wait(timeout=30)
            self._wake.clear()
            try:
                done = self.serving.call(lambda: self.serving.mnemo().run_capture_queue(self.queue))
                self.captured += sum(len(d.get("saved") or []) for d in done)  # type: ignore[union-attr]
            except MnemoError as exc:
                log.warning("capture failed (the exchanges stay queued): %s", exc)
            except Exception:
                log.exception("capture failed (the exchanges stay queued)")
            if self._stop.is_set():
                return

    # ------------------------------------------------------------ requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # uvicorn runs it with lifespan off: only HTTP comes
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if not host_header_ok(headers.get("host"), self.s.port):
            await _error(send, 403, "mnemo proxy answers only to localhost or an IP address (DNS rebinding guard)", "forbidden_host")
            return
        if scope["method"] == "OPTIONS":  # a browser's preflight: the real request must carry a proxy key
            await _send(send, 204, b"", _cors(origin) + [(b"access-control-allow-methods", b"GET, POST, OPTIONS"),
                                                          (b"access-control-allow-headers", b"authorization, content-type"),
                                                          (b"access-control-max-age", b"600")])
            return
        if not scope["path"].startswith("/v1/"):
            await _error(send, 404, f"mnemo proxy serves the OpenAI API under /v1/ (not {scope['path']})", "not_found", origin=origin)
            return
        presented = headers.get("authorization", "")
        presented = presented[7:].strip() if presented[:7].lower() == "bearer " else ""
        client = self._client(presented)
        if client is None and (self.s.require_key or origin or presented.startswith(clients.PREFIX)):
            why = "unknown proxy key" if presented.startswith(clients.PREFIX) else (
                "a browser page needs a proxy key" if origin else "this proxy needs a proxy key on every request")
            await _error(send, 401, f"mnemo proxy: {why} (mnemo proxy key add --scope …)", "invalid_api_key", origin=origin)
            return
        body = await read_body(receive, headers, MAX_BODY)
        if body is None:
            await _error(send, 413, "mnemo proxy: the request body is too large", "too_large", origin=origin)
            return
        forward = {k: v for k, v in headers.items() if k not in HOP and k != "authorization" and not k.startswith("x-mnemo-")}
        if client is not None:  # the client's key is ours: the upstream gets the configured key, or none
            if self.s.upstream_key:
                forward["authorization"] = f"Bearer {self.s.upstream_key}"
        elif presented:
            forward["authorization"] = f"Bearer {presented}"  # the client's own upstream key, passed on, never kept
        elif self.s.upstream_key:
            forward["authorization"] = f"Bearer {self.s.upstream_key}"
        mem_scope = client.scope if client is not None else (headers.get("x-mnemo-scope") or self.s.scope)
        chat = scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/chat/completions"
        request, found = None, None
        if chat:
            request, body, found = await self._with_memory(body, mem_scope, headers)
        await self._forward(scope, send, forward, body, origin=origin, found=found,
                            exchange=(request, mem_scope) if chat and request is not None else None)

    def _client(self, presented: str) -> clients.ClientKey | None:
        """The proxy key presented, if it is one (the key file is re-read when it changes)."""
        if not presented.startswith(clients.PREFIX):
            return None
        path = clients.keys_path(self.s.home)
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        if mtime != self._keys[0]:
            keys, digests = clients.load_for_serving(self.s.home) if mtime else ([], {})
            self._keys = (mtime, keys, digests)
        return clients.lookup(self._keys[1], self._keys[2], presented)

    async def _with_memory(self, body: bytes, mem_scope: str,
                           headers: dict[str, str]) -> tuple[dict[str, Any] | None, bytes, dict[str, Any] | None]:
        """The request with the memory block added (recalled within the budget), or as it came
        when it is not a chat request mnemo can read, or recall fails or is late; and the context
        injected, still to be recorded (see ``_forward``)."""
        import anyio
        import anyio.to_thread

        try:
            request = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return None, body, None  # the upstream will say what is wrong with it
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return None, body, None
        query = last_user_text(request["messages"])
        if not query or headers.get("x-mnemo-recall", "").lower() in ("0", "off", "false", "no"):
            return request, body, None
        block, found = "", None
        with anyio.move_on_after(self.s.recall_seconds):
            try:
                found = await anyio.to_thread.run_sync(self._recall, query, mem_scope, abandon_on_cancel=True)
                block = str(found.get("text") or "") if found.get("memories") else ""
            except Exception as exc:  # recall must never stop the request: it goes on without memories
                log.warning("recall failed, the request goes on without memories: %s", exc)
        if not block:
            return request, body, None
        return request, json.dumps({**request, "messages": with_memory(request["messages"], block)}, ensure_ascii=False).encode(), found

    def _recall(self, query: str, mem_scope: str) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            # recorded (accessed, logged) once the request is on its way: the write is not on the first byte's path
            return self.serving.mnemo().context(query, scope=mem_scope, budget_tokens=self.s.budget_tokens, top_k=self.s.top_k,
                                                surface="proxy", record=False)
        return self.serving.call(run)  # type: ignore[return-value]

    def _note_injected(self, found: dict[str, Any]) -> None:
        """Log what was injected (``mnemo log``) and count it as accessed; a failure costs the log line only."""
        try:
            self.serving.call(lambda: self.serving.mnemo().record_context(found, surface="proxy"))
        except Exception as exc:
            log.warning("could not log the injected memories: %s", exc)

    async def _forward(self, scope: Scope, send: Send, headers: dict[str, str], body: bytes, *, origin: str | None,
                       exchange: tuple[dict[str, Any], str] | None, found: dict[str, Any] | None = None) -> None:
        """Send the request upstream and its answer back as it arrives, recording the injected
        context (``found``) meanwhile, before the answer ends; queue the exchange for capture
        when the answer is complete."""
        import anyio
        import anyio.to_thread

        tx, rx = anyio.create_memory_object_stream[tuple[str, Any]](64)
        target = self.s.upstream.rstrip("/") + scope["path"].removeprefix("/v1") + (
            "?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else "")
        cancelled = threading.Event()
        collected: list[bytes] = []
        status_seen: list[int] = []

        def upstream() -> None:
            _call_upstream(scope["method"], target, headers, body, tx, cancelled, self.s.timeout)

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: anyio.to_thread.run_sync(upstream, abandon_on_cancel=True))
            if found is not None:
                tg.start_soon(lambda: anyio.to_thread.run_sync(self._note_injected, found))
            started = False
            try:
                async with rx:
                    async for kind, value in rx:
                        if kind == "start":
                            status, up_headers = value
                            status_seen.append(status)
                            out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in up_headers if k.lower() not in HOP]
                            await send({"type": "http.response.start", "status": status, "headers": out + _cors(origin)})
                            started = True
                        elif kind == "chunk":
                            collected.append(value)
                            await send({"type": "http.response.body", "body": value, "more_body": True})
                        elif kind == "error":
                            if started:  # the stream broke off: end it; the client sees a short answer
                                break
                            await _error(send, 502, f"mnemo proxy: the upstream {_origin_of(self.s.upstream)} cannot be reached ({value})",
                                         "upstream_unreachable", origin=origin)
                            return
            except OSError:  # the client went away: stop reading the upstream
                cancelled.set()
                return
            finally:
                cancelled.set()
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        if exchange is not None and status_seen == [200] and self.s.capture:
            request, mem_scope = exchange
            self._queue(request, b"".join(collected), mem_scope)

    def _queue(self, request: dict[str, Any], answer: bytes, mem_scope: str) -> None:
        """Queue the latest user turn and the answer's text for capture, and wake the capture thread."""
        user = last_user_text(request.get("messages"))
        reply = reply_text(answer, streamed=bool(request.get("stream")))
        if not user:
            return
        messages = [{"role": "user", "content": user}] + ([{"role": "assistant", "content": reply}] if reply else [])
        try:
            self.serving.call(lambda: self.serving.mnemo().queue_capture(self.queue, messages, scope=mem_scope, llm=self.s.capture_llm))
        except (MnemoError, OSError) as exc:
            log.warning("could not queue the exchange for capture: %s", exc)
            return
        self._wake.set()


def _call_upstream(method: str, target: str, headers: dict[str, str], body: bytes, tx: Any, cancelled: threading.Event,
                   timeout: float) -> None:
    """One upstream request in a worker thread: its status, headers and body chunks (as read)
    into ``tx``; an unreachable upstream is one ``error`` item."""
    import http.client

    import anyio.from_thread

    def put(item: tuple[str, Any]) -> bool:
        if cancelled.is_set():
            return False
        try:
            anyio.from_thread.run(tx.send, item)
            return True
        except Exception:  # the client side is gone
            return False

    parts = urlsplit(target)
    conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_type(parts.hostname or "", parts.port, timeout=timeout)
    try:
        try:
            conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body if body else None, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            put(("error", str(exc) or type(exc).__name__))
            return
        if not put(("start", (resp.status, resp.getheaders()))):
            return
        while True:
            try:
                chunk = resp.read1(65536)
            except (OSError, http.client.HTTPException) as exc:
                put(("error", str(exc)))
                return
            if not chunk or not put(("chunk", chunk)):
                return
    finally:
        conn.close()
        try:
            anyio.from_thread.run(tx.aclose)
        except Exception:
            pass


def _origin_of(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc.rpartition('@')[2]}"


def _cors(origin: str | None) -> list[tuple[bytes, bytes]]:
    """CORS answer headers for a browser page's request (it had to present a proxy key)."""
    if not origin:
        return []
    return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


async def _error(send: Send, status: int, message: str, code: str, *, origin: str | None = None) -> None:
    """An error in the OpenAI API's own shape, so every client shows its message."""
    body = json.dumps({"error": {"message": message, "type": "mnemo_proxy_error", "code": code}}, ensure_ascii=False).encode()
    await _send(send, status, body, [(b"content-type", b"application/json"), *_cors(origin)])


def wait_for_queue(app: ProxyApp, seconds: float) -> bool:
    """Whether the capture queue emptied within ``seconds`` (tests and a clean shutdown)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(app.queue.glob("*.json")) if app.queue.is_dir() else True:
            return True
        app._wake.set()
        time.sleep(0.05)
    return False
