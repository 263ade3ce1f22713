"""A local stand-in for an OpenAI-compatible chat API: records what it receives and answers as a
real one does (JSON, or Server-Sent Events streamed in several writes), for the proxy, ask and
chat tests.

What it answers is chosen by the request's ``model``:

* ``echo`` (and any other name): the reply is ``REPLY`` (or the text after ``say:`` in the
  latest user message); streamed word by word when ``stream`` is true, with a usage event;
* ``tools``: a streamed tool call (``get_weather``) with usage;
* ``err-429`` / ``err-500``: that status with an OpenAI-style error body and a custom header;
* ``slow``: the reply streamed with 0.3 s between events (Ctrl-C tests).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Sure. Noted: the answer is forty-two."


@dataclass
class Upstream:
    """The running fake: its base URL (``…/v1``), what it received, and the bytes it sent."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    delay: float = 0.0

    def chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]


def sse_events(model: str, text: str, *, delay: float) -> list[bytes]:
    """The SSE events of a streamed answer of ``text`` (one event a word, then usage, then [DONE])."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": model}
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    words = text.split(" ")
    for i, w in enumerate(words):
        events.append({**base, "choices": [{"index": 0, "delta": {"content": w + (" " if i < len(words) - 1 else "")}, "finish_reason": None}]})
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": len(words), "total_tokens": 11 + len(words)}})
    return [f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def tool_events(model: str) -> list[bytes]:
    base = {"id": "chatcmpl-tools", "object": "chat.completion.chunk", "created": 1700000000, "model": model}
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    events = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"杭州"}'}}]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**base, "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}},
    ]
    return [f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]


def _reply_for(request: dict[str, Any]) -> str:
    for msg in reversed(request.get("messages") or []):
        if msg.get("role") == "user" and isinstance(msg.get("content"), str) and "say:" in msg["content"]:
            return msg["content"].split("say:", 1)[1].strip()
    return REPLY


@contextmanager
def fake_upstream() -> Iterator[Upstream]:
    """Run the fake on a free port for the ``with`` block."""
    state = Upstream(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _record(self, body: bytes) -> dict[str, Any]:
            try:
                parsed = json.loads(body) if body else None
            except ValueError:
                parsed = None
            entry = {"path": self.path, "method": self.command, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "json": parsed}
            state.requests.append(entry)
            return entry

        def _json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            state.sent.append(data)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._record(b"")
            if self.path.endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "echo", "object": "model", "owned_by": "fake"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            entry = self._record(body)
            req = entry["json"] or {}
            if self.path.endswith("/embeddings"):
                self._json(200, {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5, 1.0]}],
                                 "model": req.get("model"), "usage": {"prompt_tokens": 3, "total_tokens": 3}})
                return
            model = str(req.get("model") or "echo")
            if model.startswith("err-"):
                status = int(model[4:])
                self._json(status, {"error": {"message": f"upstream says {status}", "type": "rate_limit" if status == 429 else "server_error"}},
                           {"Retry-After": "7", "X-Upstream-Request": "abc123"})
                return
            text = _reply_for(req)
            if not req.get("stream"):
                self._json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": model,
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})
                return
            events = tool_events(model) if model == "tools" else sse_events(model, text, delay=0)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pause = 0.3 if model == "slow" else state.delay
            try:
                for e in events:
                    state.sent.append(e)
                    self.wfile.write(f"{len(e):x}\r\n".encode() + e + b"\r\n")
                    self.wfile.flush()
                    if pause:
                        time.sleep(pause)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
