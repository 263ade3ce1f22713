"""The OpenAI-compatible embedder against a real local HTTP server (started here, loopback only)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from fake_embedder import FakeEmbedder

from mnemo import EmbedderError, Mnemo

_fake = FakeEmbedder()


class Handler(BaseHTTPRequestHandler):
    mode = "ok"
    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if Handler.mode == "error":
            self.send_response(500)
            self.end_headers()
            return
        if Handler.mode == "garbage":
            payload = b"<html>not json</html>"
        else:
            vecs = _fake.embed_passages(body["input"])
            payload = json.dumps({"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Handler.mode, Handler.seen = "ok", []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_remember_and_recall_through_an_endpoint(tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_EMBED_API_KEY", "sk-test-key")
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url=endpoint) as m:
        m.remember("the staging database listens on port 5433")
        m.remember("we water the plants on mondays")
        hits = m.recall("which port does the staging database use", min_score=0.0)
        assert hits[0].memory.content.startswith("the staging database")
        assert m.stats()["model"] == f"openai:tiny@{endpoint}"
    assert Handler.seen[0]["path"] == "/v1/embeddings"
    assert Handler.seen[0]["body"]["model"] == "tiny"
    assert Handler.seen[0]["auth"] == "Bearer sk-test-key"


@pytest.mark.parametrize(("mode", "message"), [("error", "HTTP 500"), ("garbage", "unexpected answer")])
def test_endpoint_failures_are_clear_and_change_nothing(tmp_path: Path, endpoint: str, mode: str, message: str) -> None:
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url=endpoint) as m:
        Handler.mode = mode
        with pytest.raises(EmbedderError, match=message):
            m.remember("this must not be half-saved")
        assert m.stats()["all_records"] == 0


def test_unreachable_endpoint(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url="http://127.0.0.1:9/v1") as m:
        with pytest.raises(EmbedderError, match="unreachable"):
            m.remember("nothing listens on port 9")
