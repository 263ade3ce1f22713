"""``mnemo proxy`` with the official ``openai`` client, in front of a local fake upstream that
records what it receives (``tests/fake_upstream.py``); the proxy is the real command, in its own
process, on the test's store (both backends)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_upstream import REPLY, Upstream, fake_upstream
from webserver import spawn_until


@dataclass
class Proxy:
    url: str  # …/v1
    proc: subprocess.Popen[str]

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.communicate(timeout=30)[1] or ""
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate()[1] or ""


def mnemo(*args: str, env: dict[str, str] | None = None) -> Any:
    out = subprocess.run([sys.executable, "-m", "mnemo", *args, "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else None


def start_proxy(upstream: str, *extra: str, env: dict[str, str] | None = None) -> Proxy:
    proc, found = spawn_until([sys.executable, "-m", "mnemo", "proxy", "--upstream", upstream, "--port", "0", *extra],
                              r"mnemo proxy at (http://\S+/v1)", env={**os.environ, **(env or {})})
    return Proxy(found.group(1), proc)


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with fake_upstream() as up:
        yield up


@pytest.fixture
def proxy(upstream: Upstream, mnemo_home: Any) -> Iterator[Proxy]:
    mnemo("save", "We decided to use PostgreSQL 16 for the orders database", "--type", "decision")
    mnemo("save", "I prefer answers in Chinese with code comments in English", "--type", "user_preference")
    p = start_proxy(upstream.url)
    try:
        yield p
    finally:
        p.stop()


def client(proxy: Proxy, key: str = "sk-client-own-key") -> Any:
    from openai import OpenAI

    return OpenAI(base_url=proxy.url, api_key=key, max_retries=0, timeout=60)


def injected(request: dict[str, Any]) -> str:
    """The memory block the proxy added to a recorded request ('' when none)."""
    msgs = request["json"]["messages"]
    return "\n".join(m["content"] for m in msgs if m["role"] == "system" and "[Background from earlier sessions" in m["content"])


def wait_captured(n_before: int, *, at_least: int = 1, seconds: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = mnemo("list", "--scope", "all")
        if len(rows) >= n_before + at_least:
            return rows
        time.sleep(0.3)
    return mnemo("list", "--scope", "all")


def test_memories_are_injected_for_a_relevant_question_and_not_for_an_unrelated_one(proxy, upstream) -> None:
    c = client(proxy)
    answer = c.chat.completions.create(model="echo", messages=[
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Which PostgreSQL version is the orders database on?"}])
    assert answer.choices[0].message.content == REPLY
    sent = upstream.chats()[-1]
    msgs = sent["json"]["messages"]
    assert msgs[0] == {"role": "system", "content": "You are a terse assistant."}  # the client's system prompt first, unchanged
    assert "PostgreSQL 16 for the orders database" in injected(sent) and msgs[-1]["role"] == "user"
    assert sent["headers"]["authorization"] == "Bearer sk-client-own-key"  # the client's own key, passed on

    c.chat.completions.create(model="echo", messages=[{"role": "user", "content": "tell me a joke about cats"}])
    assert injected(upstream.chats()[-1]) == ""
    log = mnemo("log")
    assert log[0]["surface"] == "proxy" and "PostgreSQL" in (log[0]["query"] or "")


def test_a_streamed_reply_is_byte_identical_to_the_upstream_and_usage_and_tool_calls_pass(proxy, upstream) -> None:
    u = urlsplit(proxy.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    body = json.dumps({"model": "echo", "stream": True, "messages": [{"role": "user", "content": "orders database version?"}]})
    upstream.sent.clear()
    conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
    resp = conn.getresponse()
    got = resp.read()
    conn.close()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    assert got == b"".join(upstream.sent)  # every byte of every event, as sent

    c = client(proxy)
    chunks = list(c.chat.completions.create(model="tools", stream=True, messages=[{"role": "user", "content": "weather in Hangzhou?"}]))
    calls = [tc for ch in chunks for choice in ch.choices for tc in (choice.delta.tool_calls or [])]
    assert calls[0].function.name == "get_weather" and "".join(tc.function.arguments or "" for tc in calls) == '{"city": "杭州"}'
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 29


def test_upstream_errors_come_back_verbatim(proxy) -> None:
    import openai

    c = client(proxy)
    for status, kind in ((429, openai.RateLimitError), (500, openai.InternalServerError)):
        with pytest.raises(kind) as err:
            c.chat.completions.create(model=f"err-{status}", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == status and f"upstream says {status}" in str(err.value)
        assert err.value.response.headers["retry-after"] == "7" and err.value.response.headers["x-upstream-request"] == "abc123"


def test_models_and_embeddings_pass_through(proxy, upstream) -> None:
    c = client(proxy)
    assert [m.id for m in c.models.list()] == ["echo"]
    emb = c.embeddings.create(model="emb", input="hello")
    assert emb.data[0].embedding == [0.25, -0.5, 1.0]
    assert [r["path"] for r in upstream.requests[-2:]] == ["/v1/models", "/v1/embeddings"]


def test_an_unreachable_upstream_is_one_clear_error(mnemo_home) -> None:
    import openai

    p = start_proxy("http://127.0.0.1:9/v1")
    try:
        with pytest.raises(openai.APIStatusError) as err:
            client(p).chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502 and "cannot be reached" in str(err.value) and "127.0.0.1:9" in str(err.value)
    finally:
        assert "Traceback" not in p.stop()


def test_when_recall_fails_the_request_is_still_answered(upstream, mnemo_home) -> None:
    # a store whose model cannot embed (its endpoint is down): recall fails, the chat does not
    env = {"MNEMO_MODEL": "openai:text-embedding-3-small", "MNEMO_EMBED_BASE_URL": "http://127.0.0.1:9/v1"}
    p = start_proxy(upstream.url, "--no-capture", env=env)
    try:
        answer = client(p).chat.completions.create(model="echo", messages=[{"role": "user", "content": "what database do we use?"}])
        assert answer.choices[0].message.content == REPLY and injected(upstream.chats()[-1]) == ""
    finally:
        err = p.stop()
    assert "recall failed" in err and "Traceback" not in err


def test_capture_keeps_the_fact_stated_and_nothing_from_chit_chat(proxy, upstream) -> None:
    before = len(mnemo("list", "--scope", "all"))
    c = client(proxy)
    c.chat.completions.create(model="echo", messages=[{"role": "user", "content": "你好，今天过得怎么样？say: 挺好的，谢谢！"}])
    c.chat.completions.create(model="echo", stream=True, messages=[
        {"role": "user", "content": "我们决定用 Redis 做订单服务的缓存。 say: 好的，记下了。"}]).close()
    rows = wait_captured(before)
    added = [r["content"] for r in rows][: len(rows) - before]
    assert added == ["我们决定用 Redis 做订单服务的缓存"], added
    time.sleep(1.0)  # the chit-chat's capture has run too: it added nothing
    assert len(mnemo("list", "--scope", "all")) == before + 1


def test_a_key_for_one_project_never_sees_another_projects_memories(upstream, mnemo_home) -> None:
    mnemo("save", "The shop deploys with Kubernetes on Fridays", "--scope", "project:shop")
    mnemo("save", "The blog deploys with Netlify on Fridays", "--scope", "project:blog")
    key = mnemo("proxy", "key", "add", "--scope", "project:shop", "--label", "cherry")["key"]
    assert key.startswith("mnemo-pk-") and mnemo("proxy", "key", "list")[0]["scope"] == "project:shop"
    p = start_proxy(upstream.url, "--no-capture")
    try:
        client(p, key).chat.completions.create(model="echo", messages=[{"role": "user", "content": "how do we deploy on Fridays?"}])
        block = injected(upstream.chats()[-1])
        assert "Kubernetes" in block and "Netlify" not in block
        assert "authorization" not in upstream.chats()[-1]["headers"]  # a proxy key never goes upstream
        import openai

        with pytest.raises(openai.AuthenticationError):
            client(p, "mnemo-pk-not-a-real-key").chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
    finally:
        p.stop()


def test_browser_pages_and_other_hosts_need_a_proxy_key(proxy) -> None:
    u = urlsplit(proxy.url)

    def post(headers: dict[str, str]) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "echo", "messages": [{"role": "user", "content": "hi"}]}),
                     headers={"Content-Type": "application/json", **headers})
        resp = conn.getresponse()
        try:
            return resp.status, resp.read()
        finally:
            conn.close()

    assert post({"Origin": "https://evil.example"})[0] == 401
    assert post({"Host": f"evil.example:{u.port}"})[0] == 403
    assert post({})[0] == 200


def test_concurrent_streams_never_mix(proxy, upstream) -> None:
    upstream.delay = 0.01
    c = client(proxy)
    got: dict[int, str] = {}

    def one(i: int) -> None:
        stream = c.chat.completions.create(model="echo", stream=True, messages=[
            {"role": "user", "content": f"number {i} say: reply {i} " + " ".join(f"w{i}" for _ in range(8))}])
        got[i] = "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert got == {i: f"reply {i} " + " ".join(f"w{i}" for _ in range(8)) for i in range(8)}


def test_the_memory_block_goes_after_the_clients_own_system_prompt() -> None:
    from mnemo._llm.stream import last_user_text, reply_text, with_memory

    msgs = [{"role": "system", "content": "be brief"}, {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "text", "text": "what db?"}, {"type": "image_url", "image_url": {"url": "x"}}]}]
    out = with_memory(msgs, "[Background] x")
    assert [m["role"] for m in out] == ["system", "developer", "system", "user"] and out[2]["content"] == "[Background] x"
    assert with_memory(msgs, "  ") is msgs and last_user_text(msgs) == "what db?" and last_user_text([]) is None
    streamed = b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\n\ndata: {"choices":[{"index":0,"delta":{"content":"llo"}}]}\n\ndata: [DONE]\n\n'
    assert reply_text(streamed, streamed=True) == "hello"
    assert reply_text(b'{"choices":[{"message":{"content":"hi"}}]}', streamed=False) == "hi"
    assert reply_text(b"not json", streamed=False) == ""


def test_the_capture_budgets_hold_on_every_surface(mnemo_home, monkeypatch) -> None:
    """The LLM extractor's daily budgets come from the settings wherever the store is opened
    (they were set by `mnemo auto` alone; the hooks, MCP and the proxy used the defaults)."""
    from mnemo._settings import config, door

    monkeypatch.setenv("MNEMO_LLM_MAX_CALLS_PER_DAY", "3")
    monkeypatch.setenv("MNEMO_LLM_MAX_TOKENS_PER_DAY", "1234")
    with door.opened(config.load({}), create=True) as m:
        assert (m.llm_budget.max_calls_per_day, m.llm_budget.max_tokens_per_day) == (3, 1234)
