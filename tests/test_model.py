"""The key behaviours with the real bundled models (e5 and USE), Chinese and English.

Slow-ish (model loads): ``pytest -m model``. One small store per model serves every test; recalls
use ``touch=False`` so the tests do not change each other's ranking.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemo import Hit, Mnemo

pytestmark = pytest.mark.model

MODELS = ["e5", "use"]

DEPLOY = "We deploy the API with GitHub Actions to a single VPS; no Kubernetes for now."
STAGING = "The staging database is PostgreSQL and runs on port 5433."
CONCISE = "I prefer concise answers with code first, explanations after."
FRONTEND = "The frontend is written in TypeScript with React and Vite."
STACK_ZH = "项目使用 FastAPI 和 PostgreSQL，消息队列用 Redis Stream"
PYTEST_ZH = "我喜欢用 pytest 写测试，不用 unittest"
LATENCY_ZH = "API 响应时间必须低于 200 毫秒"
REVIEW_ZH = "代码审查至少需要两个人批准才能合并"
OTHER_PROJECT = "Project billing deploys with Jenkins onto Kubernetes."

MEMORIES = [
    (DEPLOY, "decision", "project:app"),
    (STAGING, "fact", "project:app"),
    (CONCISE, "user_preference", "global"),
    (FRONTEND, "project_context", "project:app"),
    (STACK_ZH, "project_context", "project:app"),
    (PYTEST_ZH, "user_preference", "global"),
    (LATENCY_ZH, "constraint", "project:app"),
    (REVIEW_ZH, "workflow", "project:app"),
    (OTHER_PROJECT, "decision", "project:billing"),
]


@pytest.fixture(scope="module", params=MODELS)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Mnemo:
    m = Mnemo(tmp_path_factory.mktemp(request.param) / "store.db", model=request.param, scope="project:app")
    out = m.remember_many([dict(content=c, type=t, scope=s) for c, t, s in MEMORIES])
    assert all(a in ("created", "related") for _, a in out), out  # each stored (related: also linked)
    yield m
    m.close()


def contents(hits: list[Hit]) -> list[str]:
    return [h.memory.content for h in hits]


def ask(store: Mnemo, query: str, **kw: Any) -> list[str]:
    return contents(store.recall(query, top_k=kw.pop("top_k", 3), touch=False, **kw))


def test_store_records_the_model(store: Mnemo) -> None:
    s = store.stats()
    assert s["total"] == len(MEMORIES)
    assert s["model"] == store.embedder.name and s["dim"] == store.embedder.dim
    assert all(c["status"] == "ok" for c in store.doctor())


def test_chinese_query_finds_chinese_memory(store: Mnemo) -> None:
    assert ask(store, "代码合并前需要几个人批准？")[:1] == [REVIEW_ZH]
    assert ask(store, "测试框架用什么？")[:1] == [PYTEST_ZH]


def test_english_query_finds_english_memory(store: Mnemo) -> None:
    assert ask(store, "which port does the staging database use?")[:1] == [STAGING]


def test_english_question_finds_chinese_memory(store: Mnemo) -> None:
    assert REVIEW_ZH in ask(store, "how many approvals does a code review need before merging?")


def test_chinese_question_finds_english_memory(store: Mnemo) -> None:
    assert DEPLOY in ask(store, "部署方式是什么？")


@pytest.mark.parametrize("query", ["how do I bake sourdough bread?", "what is the weather like in Paris?", "怎么做红烧肉？", "what's a good pasta recipe?"])
def test_unrelated_query_returns_nothing(store: Mnemo, query: str) -> None:
    assert ask(store, query, scope="all") == []


def test_traditional_chinese_query_matches_simplified_memory(store: Mnemo) -> None:
    assert ask(store, "代碼審查", mode="fts") == [REVIEW_ZH]  # by words: 代碼審查 → 代码审查
    assert ask(store, "代碼審查需要幾個人批准")[:1] == [REVIEW_ZH]


def test_other_projects_stay_out(store: Mnemo) -> None:
    assert OTHER_PROJECT not in ask(store, "how do we deploy? Jenkins or Kubernetes?", top_k=10)
    assert OTHER_PROJECT in ask(store, "how do we deploy? Jenkins or Kubernetes?", top_k=10, scope="all")
    billing_view = ask(store, "which port does the staging database use?", scope="project:billing", top_k=10)
    assert set(billing_view) <= {OTHER_PROJECT, CONCISE, PYTEST_ZH}  # billing's own and global memories only


# ---------------------------------------------------------------- the demo


@pytest.fixture(scope="module", params=MODELS)
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], str]:
    home = tmp_path_factory.mktemp(f"demo-{request.param}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env["MNEMO_HOME"] = str(home)
    p = subprocess.run([sys.executable, "-m", "mnemo", "demo", "--json", "--model", request.param],
                       env=env, capture_output=True, text=True, timeout=300)
    assert not (home / "memory.db").exists()  # the demo never touches the real store
    return p, request.param


def test_demo_runs(demo: tuple[subprocess.CompletedProcess[str], str]) -> None:
    p, model = demo
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    report = json.loads(p.stdout)
    assert len(report["saved"]) == 6 and len(report["searches"]) == 4
    assert report["stats"]["total"] == 8 and report["stats"]["model"].startswith(model)  # 6 saved + 2 captured
    assert not Path(report["store"]).exists()


def test_demo_claims_hold(demo: tuple[subprocess.CompletedProcess[str], str]) -> None:
    """Each demo search says what it shows; what it shows must be true."""
    p, _ = demo
    assert p.returncode == 0, p.stderr
    found = {s["query"]: [r["content"] for r in s["results"]] for s in json.loads(p.stdout)["searches"]}
    assert any(c.startswith("项目使用 FastAPI") for c in found["what database and queue does the project use?"])  # English question, Chinese memory
    assert found["how do I bake sourdough bread?"] == []  # unrelated: nothing comes back
    assert any("pytest" in c for c in found["testing framework preference"])  # by meaning
    assert any("GitHub Actions" in c for c in found["部署方式是什么？"])  # Chinese question, English memory
    report = json.loads(p.stdout)
    assert [d["type"] for d in report["captured"]["detected"]] == ["user_preference", "decision"]  # chit-chat left out
    assert "Vue 3" in report["context"]["text"]  # the frontend decision reaches the assistant


def test_a_pasted_long_prompt_is_embedded_as_one_window_of_its_head_and_tail() -> None:
    """A 32,000-character query was embedded whole, window after window (about a minute of
    CPU); a query is cut to the model's one window, keeping its head and its tail."""
    from mnemo._recall.embed import E5Embedder

    e5 = E5Embedder(threads=1)
    model = e5._get()
    question = "数据库端口是多少？"
    pasted = "日志：连接超时，重试中。" * 2700 + question
    fitted = e5._fit(model, pasted, e5.QUERY_TOKENS, query=True)
    assert model.token_count(fitted, True) <= E5Embedder.QUERY_TOKENS
    assert fitted.endswith(question) and fitted.startswith("日志：连接超时")
    short = "what editor do I use"
    assert e5._fit(model, short, e5.QUERY_TOKENS, query=True) == short
    vec = e5.embed_queries([pasted, short])
    assert vec.shape == (2, e5.dim)
    # the cut query still means what the question at its end asks
    port, other = e5.embed_passages(["数据库端口是 5432", "我喜欢用 Neovim 写代码"])
    assert float(vec[0] @ port) > float(vec[0] @ other)


def test_the_default_thread_count_leaves_busy_cores_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo._recall import embed

    monkeypatch.setattr(embed.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(embed, "_running_now", lambda: float("inf"))  # no /proc/stat: the load average alone
    monkeypatch.setattr(embed.os, "getloadavg", lambda: (6.2, 0.0, 0.0))
    assert embed.idle_cores() == 2
    monkeypatch.setattr(embed.os, "getloadavg", lambda: (11.0, 0.0, 0.0))
    assert embed.idle_cores() == 1
    monkeypatch.setattr(embed.os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    assert embed.idle_cores() == 8
    # a load average kept up by tasks that use no core, while nothing else runs: every core
    monkeypatch.setattr(embed.os, "getloadavg", lambda: (7.0, 0.0, 0.0))
    monkeypatch.setattr(embed, "_running_now", lambda: 0.0)
    assert embed.idle_cores() == 8
    # …and processes on cores right now count even when the average has not caught up
    monkeypatch.setattr(embed.os, "getloadavg", lambda: (7.0, 0.0, 0.0))
    monkeypatch.setattr(embed, "_running_now", lambda: 5.0)
    assert embed.idle_cores() == 3


def test_the_engine_runs_on_one_thread_whoever_calls() -> None:
    """OpenMP keeps a spinning team per calling thread: a server's changing worker threads made a
    query 2-3x slower; every call runs on the embedder's one engine thread."""
    import threading

    from mnemo._recall.embed import E5Embedder

    e5 = E5Embedder(threads=1)
    model = e5._get()
    ran_on: list[str] = []
    query = model.query

    def recording(texts):  # type: ignore[no-untyped-def]
        ran_on.append(threading.current_thread().name)
        return query(texts)

    model.query = recording
    first = e5.embed_queries(["数据库端口是多少"])
    threads = [threading.Thread(target=e5.embed_queries, args=([f"question {i}"],)) for i in range(3)]
    for t in threads:
        t.start()
        t.join()
    again = e5.embed_queries(["数据库端口是多少"])
    assert len(ran_on) == 5 and len(set(ran_on)) == 1 and ran_on[0].startswith("mnemo-e5"), ran_on
    assert abs(float(first[0] @ again[0]) - 1.0) < 1e-5


def test_the_running_count_is_read_from_the_kernel() -> None:
    from mnemo._recall import embed

    running = embed._running_now()
    if not Path("/proc/stat").exists():
        assert running == float("inf")
    else:
        assert 0 <= running < (os.cpu_count() or 1) * 64  # this test's own process is not counted


def test_a_very_long_memory_is_embedded_by_its_head() -> None:
    from mnemo._recall.embed import E5Embedder

    e5 = E5Embedder(threads=1)
    model = e5._get()
    long = "这次会议讨论了数据库迁移和缓存策略。" * 2000
    fitted = e5._fit(model, long, E5Embedder.PASSAGE_TOKENS, query=False)
    assert model.token_count(fitted, False) <= E5Embedder.PASSAGE_TOKENS and long.startswith(fitted)
    short = "我习惯用 Neovim 写代码"
    assert e5._fit(model, short, E5Embedder.PASSAGE_TOKENS, query=False) == short
    assert e5.embed_passages([long, short]).shape == (2, e5.dim)
