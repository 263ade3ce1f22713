"""The LLM extractor against a real local HTTP server speaking the chat-completions protocol:
success, and every failure (malformed JSON, schema violations, timeout, HTTP 500, budget
exhaustion) giving a clear message, a rules fallback and no partial writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chat_store
from fake_embedder import ChatEndpoint, FakeEmbedder

from mnemo import Mnemo
from mnemo._core.capture import CHUNK_CHARS, USAGE_KIND, LLMBudget

CONVO = [
    {"role": "user", "content": "项目使用 FastAPI + PostgreSQL，有问题发邮件到 dev.lead@example.com。<private>服务器密码是 hunter2</private>"},
    {"role": "assistant", "content": "好的，我记下了。"},
]
GOOD = {"memories": [
    {"content": "项目的后端使用 FastAPI 和 PostgreSQL", "type": "project_context", "confidence": 0.9, "tags": ["stack"]},
    {"content": "助手会用中文回答", "type": "user_preference", "confidence": 0.8, "tags": [], "speaker": "assistant"},
]}


def _store(tmp_path: Path, ep: ChatEndpoint, timeout: float = 20.0) -> Mnemo:
    return chat_store(tmp_path, ep, "extract-model", timeout)


def _llm_usage(m: Mnemo) -> dict[str, int]:
    return m.stats()["llm_usage"]["today"].get(USAGE_KIND, {"calls": 0, "tokens": 0})


def test_llm_extraction_end_to_end(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = GOOD
    chat.usage = {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}
    with _store(tmp_path, chat) as m:
        out = m.auto(CONVO, session="s-9", llm=True)
        assert out["extractor"] == "llm" and out["fallback"] is None and out["counts"]["created"] == 2
        mems = {mem.content: mem for mem in m.list()}
        stack = mems["项目的后端使用 FastAPI 和 PostgreSQL"]
        assert stack.source == "llm" and stack.type == "project_context" and stack.tags == ["stack"] and stack.source_session == "s-9"
        bot = mems["助手会用中文回答"]
        assert bot.metadata["speaker"] == "assistant" and bot.confidence < 0.8  # the assistant's words count less
        assert _llm_usage(m) == {"calls": 1, "tokens": 340}  # the endpoint's own count
    sent = chat.seen[0]["body"]
    assert sent["model"] == "extract-model" and sent["response_format"] == {"type": "json_object"}
    system, user = sent["messages"][0]["content"], sent["messages"][1]["content"]
    assert '"memories"' in system and "Chinese" in user and "项目使用 FastAPI" in user
    assert "dev.lead@example.com" not in user and "hunter2" not in user  # redacted, private removed before sending


def test_tokens_are_estimated_when_the_endpoint_reports_none(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = {"memories": []}
    with _store(tmp_path, chat) as m:
        out = m.auto("We decided to use Go.", llm=True)
        assert out["extractor"] == "llm" and out["detected"] == [] and m.stats()["total"] == 0
        assert _llm_usage(m)["calls"] == 1 and _llm_usage(m)["tokens"] > 50


BAD_ANSWERS = {
    "http-500": ("error", None, "HTTP 500"),
    "timeout": ("slow", None, "unreachable"),
    "not-json-body": ("garbage", None, "unexpected answer"),
    "not-json-content": ("ok", "Sure! Here are the memories: project uses FastAPI", "not JSON"),
    "no-memories-list": ("ok", {"items": []}, "memories"),
    "unknown-type": ("ok", {"memories": [GOOD["memories"][0], {"content": "x", "type": "opinion", "confidence": 0.5}]}, "opinion"),
    "bad-confidence": ("ok", {"memories": [GOOD["memories"][0], {"content": "x", "type": "fact", "confidence": 7}]}, "confidence"),
    "empty-content": ("ok", {"memories": [GOOD["memories"][0], {"content": " ", "type": "fact", "confidence": 0.5}]}, "content"),
}


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_every_failure_falls_back_to_the_rules_and_writes_nothing_of_the_answer(tmp_path: Path, chat: ChatEndpoint, case: str) -> None:
    mode, reply, reason = BAD_ANSWERS[case]
    chat.mode = mode
    if reply is not None:
        chat.reply = reply
    with _store(tmp_path, chat, timeout=1.0) as m:
        out = m.auto(CONVO, llm=True)
        assert out["extractor"] == "rules" and reason in out["fallback"] and "rules were used" in out["fallback"]
        contents = {mem.content for mem in m.list()}
        assert contents == {"项目使用 FastAPI + PostgreSQL，有问题发邮件到 [邮箱]"}  # what the rules found (redacted)
        assert all(mem.source == "auto" for mem in m.list())
        assert _llm_usage(m)["calls"] == 1  # a failed call was still spent


def test_a_failure_in_a_later_chunk_loses_the_earlier_chunks_too(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = GOOD
    long_convo = [{"role": "user", "content": "I prefer tabs. " + "x" * (CHUNK_CHARS - 100)},
                  {"role": "user", "content": "We decided to use Go. " + "y" * (CHUNK_CHARS - 100)}]
    answers = iter([GOOD, {"memories": "broken"}])
    chat.answer = lambda body: ChatEndpoint.answer(type("R", (), {"reply": next(answers), "usage": None})(), body)  # type: ignore[method-assign]
    with _store(tmp_path, chat) as m:
        out = m.auto(long_convo, llm=True)
        assert len(chat.seen) == 2 and out["extractor"] == "rules" and "memories" in out["fallback"]
        assert "项目的后端使用 FastAPI 和 PostgreSQL" not in {mem.content for mem in m.list()}


def test_budget_exhaustion_falls_back_without_calling(tmp_path: Path, chat: ChatEndpoint) -> None:
    chat.reply = GOOD
    with _store(tmp_path, chat) as m:
        m.llm_budget = LLMBudget(max_calls_per_day=1, max_tokens_per_day=100_000)
        assert m.auto(CONVO, llm=True)["extractor"] == "llm"
        out = m.auto("We decided to use Go.", llm=True)
        assert out["extractor"] == "rules" and "budget" in out["fallback"] and "1/1 calls" in out["fallback"]
        assert len(chat.seen) == 1 and [s["content"] for s in out["saved"]] == ["We decided to use Go"]
        m.llm_budget = LLMBudget(max_calls_per_day=100, max_tokens_per_day=10)
        out = m.auto("We decided to use Rust.", llm=True)
        assert "tokens" in out["fallback"] and len(chat.seen) == 1
        assert _llm_usage(m)["calls"] == 1


def test_cli_llm_path_budget_and_stats(cli, tmp_path: Path, chat: ChatEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    chat.reply = GOOD
    chat.usage = {"total_tokens": 77}
    db = str(tmp_path / "c.db")
    monkeypatch.setenv("MNEMO_LLM_BASE_URL", chat.url)
    monkeypatch.setenv("MNEMO_LLM_MODEL", "m")
    out = cli("auto", "--llm", "--json", "--db", db, "项目使用 FastAPI")
    assert out.code == 0, out.err
    assert out.json()["extractor"] == "llm"
    stats = cli("stats", "--json", "--db", db).json()
    assert stats["llm_usage"]["today"][USAGE_KIND] == {"calls": 1, "tokens": 77}
    assert "LLM today" in cli("stats", "--db", db).out
    monkeypatch.setenv("MNEMO_LLM_MAX_CALLS_PER_DAY", "1")
    over = cli("auto", "--llm", "--db", db, "We decided to use Go.")
    assert over.code == 0 and "budget" in over.err and "rules were used" in over.err
    monkeypatch.setenv("MNEMO_CAPTURE_LLM", "true")  # the setting turns the LLM on; --rules turns it off again
    assert cli("auto", "--json", "--dry-run", "--db", db, "I prefer tabs.").json()["fallback"] is not None
    assert cli("auto", "--rules", "--json", "--dry-run", "--db", db, "I prefer tabs.").json()["fallback"] is None
