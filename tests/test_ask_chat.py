"""``mnemo ask`` and ``mnemo chat`` end to end, in a pseudo-terminal (pexpect), against the local
fake chat endpoint (``tests/fake_upstream.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_upstream import REPLY, Upstream, fake_upstream


@pytest.fixture
def up(mnemo_home: Any) -> Iterator[Upstream]:
    with fake_upstream() as fake:
        yield fake


def _env(up: Upstream, model: str = "echo") -> dict[str, str]:
    return {**os.environ, "MNEMO_LLM_BASE_URL": up.url, "MNEMO_LLM_MODEL": model, "TERM": "dumb", "COLUMNS": "200"}


def mnemo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mnemo", *args], capture_output=True, text=True, timeout=120, env=env)


def contents(env: dict[str, str]) -> list[str]:
    out = mnemo("list", "--scope", "all", "--json", env=env)
    assert out.returncode == 0, out.stderr
    return [r["content"] for r in json.loads(out.stdout)]


def blocks(up: Upstream) -> list[str]:
    return [m["content"] for m in up.chats()[-1]["json"]["messages"] if m["role"] == "system"]


def test_ask_streams_the_answer_with_memories_and_captures_the_exchange(up) -> None:
    env = _env(up)
    assert mnemo("save", "We decided to use PostgreSQL 16 for the orders database", "--type", "decision", env=env).returncode == 0
    out = mnemo("ask", "--why", "Which PostgreSQL version runs the orders database? say: 好的。另外我们决定用 Redis 做订单缓存。", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "好的。另外我们决定用 Redis 做订单缓存。"  # the answer alone on stdout
    assert "memory: mem_" in out.stderr and "PostgreSQL 16" in out.stderr  # --why, before the answer
    assert "remembered 1: 另外我们决定用 Redis 做订单缓存" in out.stderr and "Traceback" not in out.stderr
    assert any("PostgreSQL 16 for the orders database" in b for b in blocks(up))
    assert "另外我们决定用 Redis 做订单缓存" in contents(env)
    assert json.loads(mnemo("log", "--json", env=env).stdout)[0]["surface"] == "chat"


def test_ask_without_recall_or_capture_and_as_json(up) -> None:
    env = _env(up)
    mnemo("save", "We decided to use PostgreSQL 16 for the orders database", env=env)
    out = mnemo("ask", "--no-recall", "--no-capture", "which database for orders? say: 我们决定用 MySQL。", env=env)
    assert out.returncode == 0 and blocks(up) == [] and len(contents(env)) == 1
    out = mnemo("ask", "--json", "--no-capture", "which database for orders?", env=env)
    data = json.loads(out.stdout)
    assert data["answer"] == REPLY and data["finished"] is True and data["memories"][0]["content"].startswith("We decided")


def test_ask_says_what_is_missing_and_what_the_endpoint_answered(up, mnemo_home) -> None:
    env = {k: v for k, v in _env(up).items() if k not in ("MNEMO_LLM_BASE_URL", "MNEMO_LLM_MODEL")}
    out = mnemo("ask", "hello", env=env)
    assert out.returncode == 2 and "llm_base_url" in out.stderr and "Traceback" not in out.stderr
    out = mnemo("ask", "hello", env=_env(up, model="err-429"))
    assert out.returncode != 0 and "HTTP 429: upstream says 429" in out.stderr and "Traceback" not in out.stderr
    out = mnemo("ask", "hello", env={**_env(up), "MNEMO_LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert out.returncode != 0 and "unreachable" in out.stderr and "Traceback" not in out.stderr


def test_an_exchange_left_queued_is_captured_by_the_next_run(up, default_db) -> None:
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo

    env = _env(up)
    with Mnemo(default_db, embedder=FakeEmbedder()) as m:  # what a chat killed before its capture left behind
        m.queue_capture(os.path.join(os.environ["MNEMO_HOME"], "capture-queue"),
                        [{"role": "user", "content": "我们决定用 Kafka 做事件总线。"}, {"role": "assistant", "content": "好的。"}])
    out = mnemo("ask", "--no-capture", "hello", env=env)
    assert out.returncode == 0, out.stderr
    assert "我们决定用 Kafka 做事件总线" in contents(env)
    assert not any(p.endswith(".json") for p in os.listdir(os.path.join(os.environ["MNEMO_HOME"], "capture-queue")))


def _chat(up: Upstream, model: str = "echo") -> Any:
    import pexpect

    child = pexpect.spawn(sys.executable, ["-m", "mnemo", "chat"], env=_env(up, model), encoding="utf-8", timeout=60, dimensions=(40, 200))
    child.expect("mnemo chat")
    child.expect("› ")
    return child


def test_chat_streams_keeps_the_session_and_answers_slash_commands(up) -> None:
    env = _env(up)
    mnemo("save", "We decided to use PostgreSQL 16 for the orders database", "--type", "decision", env=env)
    child = _chat(up)
    child.sendline("which database for the orders? say: 我们决定用 Redis 做订单缓存。")
    answer(child, "我们决定用 Redis 做订单缓存。")
    child.expect(r"\(remembered 1: ")  # the background capture, announced
    child.sendline("/why")
    child.expect("PostgreSQL 16 for the orders database")
    child.sendline("and the second question? say: fine")
    answer(child, "fine")
    sent = up.chats()[-1]["json"]["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == ["user", "assistant", "user"]  # the session's turns
    child.sendline("/remember 我的时区是 UTC+8")
    child.expect(r"created mem_\w+")
    mem_id = child.after.split()[-1]
    child.sendline(f"/forget {mem_id}")
    child.expect("forgot")
    child.sendline("/scope project:shop")
    child.expect("scope project:shop")
    child.sendline("/model other-model")
    child.expect("model other-model")
    child.sendline("/new")
    child.expect("new conversation")
    child.sendline("fresh start say: ok")
    answer(child, "ok")
    assert [m["role"] for m in up.chats()[-1]["json"]["messages"] if m["role"] != "system"] == ["user"]
    assert up.chats()[-1]["json"]["model"] == "other-model"
    child.sendline("/bogus")
    child.expect("unknown command /bogus")
    child.sendline("/exit")
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 0
    kept = contents(env)
    assert any("我们决定用 Redis 做订单缓存" in c for c in kept) and not any("UTC+8" in c for c in kept)


def test_ctrl_c_stops_an_answer_and_the_session_goes_on(up) -> None:
    child = _chat(up, model="slow")
    child.sendline("tell me a long story say: one two three four five six seven eight nine ten eleven twelve")
    child.expect("\r\none two")  # the answer has begun (not the echo of the line typed)
    child.sendintr()
    child.expect(r"\(interrupted\)")
    child.expect("› ")
    started = time.monotonic()
    child.sendline("/model echo")
    child.expect("model echo")
    child.sendline("again say: done now")
    answer(child, "done now")
    assert time.monotonic() - started < 20
    child.expect("› ")  # at the prompt again: Ctrl-D now means "leave"
    child.sendeof()
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 0


def answer(child: Any, text: str) -> None:
    """Wait for ``text`` as a streamed answer: a line of its own (the typed line echoes it too)."""
    import re

    child.expect("\r\n" + re.escape(text) + "\r\n")


def pexpect_eof() -> Any:
    import pexpect

    return pexpect.EOF
