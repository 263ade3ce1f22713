"""The optional LLM (OpenAI-compatible chat endpoint) against a real local HTTP server: the
judge for unclear write-time decisions and consolidation summaries; every failure falls back to
the rules, says so, and writes nothing half-way."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chat_store
from fake_embedder import ChatEndpoint, FakeEmbedder

from mnemo import Mnemo
from mnemo._llm.chat import ChatClient

A = "the staging database runs PostgreSQL"
B = "the staging database runs PostgreSQL with nightly backups"  # unclear to the rules: linked as related


def _store(tmp_path: Path, ep: ChatEndpoint, timeout: float = 20.0) -> Mnemo:
    return chat_store(tmp_path, ep, "judge-model", timeout)


@pytest.mark.parametrize(("relation", "action"), [("duplicate", "merged"), ("conflicting", "superseded"), ("related", "related"), ("different", "created")])
def test_the_judge_decides_unclear_pairs(tmp_path: Path, chat: ChatEndpoint, relation: str, action: str) -> None:
    chat.reply = {"relation": relation, "reason": "test"}
    with _store(tmp_path, chat) as m:
        a = m.remember(A)
        _, got = m.remember_many([{"content": B}])[0]
        assert got == action
        assert m.stats()["by_status"] == ({"active": 1} if action == "merged" else {"active": 1, "superseded": 1} if action == "superseded" else {"active": 2})
        if action == "superseded":
            assert m.get(a.id).status == "superseded"
    sent = chat.seen[0]["body"]
    assert sent["model"] == "judge-model" and A in sent["messages"][1]["content"] and B in sent["messages"][1]["content"]


def test_the_judge_is_never_asked_to_merge_two_subjects_of_one_template(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = {"relation": "duplicate"}  # a judge that would merge anything
    with _store(tmp_path, chat) as m:
        m.remember("worker 1 note 2: retried the payment sync from process 1")
        assert m.remember_many([{"content": "worker 2 note 2: retried the payment sync from process 2"}])[0][1] == "created"
        assert m.stats()["total"] == 2
    assert chat.seen == []


def test_clear_cases_never_reach_the_llm(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = {"relation": "different"}
    with _store(tmp_path, chat) as m:
        m.remember("The API server listens on port 8080")
        assert m.remember_many([{"content": "The API server listens on port 9090"}])[0][1] == "superseded"  # the rules
        assert m.remember_many([{"content": "我喜欢乌龙茶"}])[0][1] == "created"  # nothing similar
    assert chat.seen == []


@pytest.mark.parametrize("mode", ["error", "garbage", "slow", "bad-json", "bad-relation"])
def test_judge_failures_fall_back_to_the_rules(tmp_path: Path, chat: ChatEndpoint, mode: str) -> None:
    chat.mode = "ok" if mode.startswith("bad") else mode
    chat.reply = "this is not json" if mode == "bad-json" else {"relation": "maybe"}
    with _store(tmp_path, chat, timeout=1.0) as m:
        m.remember(A)
        mem, action = m.remember_many([{"content": B}])[0]
        assert action == "related"  # what the rules decide
        assert m.stats()["by_status"] == {"active": 2}  # nothing half-written
        supersedes = [e for e in m.history(mem.id) if e["kind"] != "created"]
        assert supersedes == []


def test_consolidation_summary_by_the_llm_and_its_fallback(tmp_path: Path, chat: ChatEndpoint) -> None:
    frags = ["deploy pipeline builds the image", "deploy pipeline runs the tests", "deploy pipeline pushes the image"]
    chat.reply = {"summary": "The deploy pipeline builds the image, runs the tests and pushes it."}
    with _store(tmp_path, chat) as m:
        for f in frags:
            m.remember(f, dedup=False)
        done = m.consolidate(apply=True)
        g = done["groups"][0]
        assert g["summary_by"] == "llm" and m.get(g["summary_id"]).content == chat.reply["summary"]
    chat.mode = "error"
    with Mnemo(tmp_path / "t.db", embedder=FakeEmbedder(), chat=ChatClient(chat.url, "m")) as m:
        for f in frags:
            m.remember(f, dedup=False)
        g = m.consolidate()["groups"][0]
        assert g["summary_by"].startswith("extractive (LLM unavailable") and "deploy pipeline" in g["summary"]


def test_doctor_says_what_goes_to_the_llm(tmp_path: Path, chat: ChatEndpoint) -> None:
    with _store(tmp_path, chat) as m:
        network = {c["check"]: c for c in m.doctor()}["network"]
    assert network["status"] == "warn" and chat.url in network["detail"]


def test_the_judge_is_asked_without_holding_the_write_lock(tmp_path: Path) -> None:
    """A slow LLM must not block other writers: while the endpoint answers, another connection
    writes to the same store with a short busy timeout."""
    import apsw

    db = tmp_path / "s.db"
    wrote: list[str] = []

    class WritingEndpoint(ChatEndpoint):
        def answer(self, body: dict) -> dict:
            conn = apsw.Connection(str(db))
            conn.setbusytimeout(200)
            try:
                conn.execute("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
                wrote.append("ok")
            except apsw.BusyError:
                wrote.append("busy")
            finally:
                conn.close()
            return super().answer(body)

    ep = WritingEndpoint()
    ep.reply = {"relation": "duplicate"}
    try:
        with Mnemo(db, embedder=FakeEmbedder(), chat=ChatClient(ep.url, "judge-model")) as m:
            m.remember(A)
            assert m.remember_many([{"content": B}])[0][1] == "merged"
    finally:
        ep.close()
    assert wrote == ["ok"]
