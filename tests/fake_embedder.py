"""The one small deterministic fake embedder every fast test uses (never a shipped default).

A hashed bag of words over mnemo's own tokenizer: texts sharing words are similar, texts
sharing none are orthogonal. Real-model behaviour is covered by tests marked ``model``.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from mnemo._base import text as _text
from mnemo._recall.embed import Calibration

DIM = 256


class FakeEmbedder:
    name = "fake-hash-256"
    dim = DIM
    calibration = Calibration(floor=0.05, scale=0.3, dense_weight=0.7, candidate=-0.1, link=0.03, merge=0.05)

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(DIM, np.float32)
        for tok in _text.index_tokens(text).split():
            h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
            v[h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.vstack([self._vec(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    embed_passages = embed_queries


class WrongDimEmbedder(FakeEmbedder):
    """Claims the fake model's identity but returns 32-d vectors (a broken model)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 32), np.float32) / np.sqrt(32)

    embed_passages = embed_queries


OFF_TOPIC = ("knitting patterns", "bread baking", "violin lessons", "giraffe", "tulips", "origami cranes", "penguin",
             "sailing knots", "pottery glaze", "chess endgame", "opera tickets", "marathon training")


def unrelated_query(texts: list[str]) -> str:
    """An off-topic query sharing nothing with ``texts`` even under this embedder, whose hashed
    buckets make some unrelated words collide (which words depends on the tokenizer)."""
    emb = FakeEmbedder()
    vecs = emb.embed_passages(texts)
    for q in OFF_TOPIC:
        if float((vecs @ emb.embed_queries([q])[0]).max()) <= 0.0:
            return q
    raise AssertionError("every off-topic candidate collides with the memories under the fake embedder: add candidates")


class LocalEndpoint:
    """A local HTTP JSON server on loopback that records every request; subclasses answer.
    ``mode``: ``ok``, ``error`` (HTTP 500), ``garbage`` (not JSON) or ``slow`` (sleeps 3 s)."""

    def __init__(self) -> None:
        import json
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        endpoint = self
        self.mode = "ok"
        self.seen: list[dict] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                if endpoint.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                if endpoint.mode == "slow":
                    time.sleep(3)
                payload = b"<html>not json</html>" if endpoint.mode == "garbage" else json.dumps(endpoint.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answer(self, body: dict) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class EmbeddingEndpoint(LocalEndpoint):
    """OpenAI-compatible ``/v1/embeddings`` backed by the fake embedder."""

    def answer(self, body: dict) -> dict:
        vecs = FakeEmbedder().embed_passages(body["input"])
        return {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]}


class ChatEndpoint(LocalEndpoint):
    """OpenAI-compatible ``/v1/chat/completions`` that answers with ``reply`` (a JSON-able object,
    or a string sent as the message content as it is), plus ``usage`` (token counts) when set."""

    reply: object = {}
    usage: dict | None = None

    def answer(self, body: dict) -> dict:
        import json

        content = self.reply if isinstance(self.reply, str) else json.dumps(self.reply, ensure_ascii=False)
        payload: dict = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        if self.usage is not None:
            payload["usage"] = self.usage
        return payload
