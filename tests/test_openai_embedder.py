"""The OpenAI-compatible embedder against a real local HTTP server (started here, loopback only)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from fake_embedder import EmbeddingEndpoint

from mnemo import EmbedderError, Mnemo

@pytest.fixture
def server() -> Iterator[EmbeddingEndpoint]:
    ep = EmbeddingEndpoint()
    yield ep
    ep.close()


@pytest.fixture
def endpoint(server: EmbeddingEndpoint) -> str:
    return server.url


def test_remember_and_recall_through_an_endpoint(tmp_path: Path, server: EmbeddingEndpoint, endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_EMBED_API_KEY", "sk-test-key")
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url=endpoint) as m:
        m.remember("the staging database listens on port 5433")
        m.remember("we water the plants on mondays")
        hits = m.recall("which port does the staging database use", min_score=0.0)
        assert hits[0].memory.content.startswith("the staging database")
        assert m.stats()["model"] == f"openai:tiny@{endpoint}"
    assert server.seen[0]["path"] == "/v1/embeddings"
    assert server.seen[0]["body"]["model"] == "tiny"
    assert server.seen[0]["auth"] == "Bearer sk-test-key"


@pytest.mark.parametrize(("mode", "message"), [("error", "HTTP 500"), ("garbage", "unexpected answer")])
def test_endpoint_failures_are_clear_and_change_nothing(tmp_path: Path, server: EmbeddingEndpoint, endpoint: str, mode: str, message: str) -> None:
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url=endpoint) as m:
        server.mode = mode
        with pytest.raises(EmbedderError, match=message):
            m.remember("this must not be half-saved")
        assert m.stats()["all_records"] == 0


def test_unreachable_endpoint(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", model="openai:tiny", embed_base_url="http://127.0.0.1:9/v1") as m:
        with pytest.raises(EmbedderError, match="unreachable"):
            m.remember("nothing listens on port 9")
