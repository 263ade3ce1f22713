"""No distinct fact is hidden by a write-time decision, a restore or a consolidation, and every
surface writes into the scope of the project it works in.

The decision tests run through the real bundled models (marked ``model``): the fake embedder's
cosines are not e5's, whose unrelated pairs sit at 0.8 and whose look-alikes ("the orders table…"
/ "the payments table…") score 0.98. The scope tests drive the real MCP client and the hook
command with the fake embedder: the scope a surface picks does not depend on the model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemo import Mnemo
from mnemo._settings.scope import project_scope

DATA = Path(__file__).parent / "data"
MNEMO = str(Path(sys.executable).with_name("mnemo"))


@pytest.fixture(scope="module", params=["e5", "use"])
def real(request: pytest.FixtureRequest) -> Any:
    from mnemo._recall.embed import make_embedder

    return make_embedder(request.param)


def fresh(target: str, emb: Any) -> Mnemo:
    """A store on this run's backend (a file, or a fresh PostgreSQL database) with a real model."""
    return Mnemo(target, embedder=emb, scope="project:t")


def second(m: Mnemo, old: str, new: str, type: str = "note") -> tuple[str, str]:
    """Save ``old`` then ``new``; the action on ``new`` and the old memory's status."""
    a = m.remember(old, type=type)
    _, action = m.remember_many([{"content": new, "type": type}])[0]
    return action, m.get(a.id).status


# ---------------------------------------------------------------- decisions, real models

@pytest.mark.model
def test_patterned_notes_from_two_workers_all_stay(store_target: str, real: Any) -> None:
    with fresh(store_target, real) as m:
        notes = [f"worker {p} note {i}: 第 {i} 条并发写入 from process {p}" for p in (1, 2) for i in (1, 2, 3)]
        actions = [m.remember_many([{"content": n}])[0][1] for n in notes]
        assert "merged" not in actions and "superseded" not in actions, actions
        assert m.stats()["total"] == 6
        for n in notes:  # each one is found by its own words
            assert n in [h.memory.content for h in m.recall(n, top_k=3, touch=False)]


@pytest.mark.model
@pytest.mark.parametrize("old,new", [
    ("Redis for caching", "Redis for rate limiting"),
    ("订单数据保存在 MySQL 中，每天凌晨备份", "用户数据保存在 MySQL 中，每天凌晨备份"),
    ("The staging database is PostgreSQL on port 5433", "The production database is PostgreSQL on port 5432"),
    ("Alice owns the billing service", "Bob owns the billing dashboard"),
])
def test_different_facts_are_never_merged_or_superseded(store_target: str, real: Any, old: str, new: str) -> None:
    with fresh(store_target, real) as m:
        action, status = second(m, old, new)
        assert action in ("created", "related") and status == "active", (old, new, action)
        assert m.stats()["total"] == 2


@pytest.mark.model
@pytest.mark.parametrize("old,new", [
    ("CI 跑在 Jenkins 上", "CI 迁移到了 GitHub Actions"),
    ("The upload API must reject files larger than 25 MB", "另外上传接口的大小限制改成 50 MB"),  # across languages
    ("The API server listens on port 8080", "The API server listens on port 9090"),
    ("缓存用 Redis", "缓存不再使用 Redis，改用本地内存"),
])
def test_real_updates_supersede(store_target: str, real: Any, old: str, new: str) -> None:
    with fresh(store_target, real) as m:
        action, status = second(m, old, new, type="decision")
        assert (action, status) == ("superseded", "superseded"), (old, new)
        block = m.context(None)["text"]  # what a new session is told: the current value only
        assert new in block and old not in block


@pytest.mark.model
def test_unrelated_memories_are_not_linked_and_expand_says_how(store_target: str, real: Any) -> None:
    with fresh(store_target, real) as m:
        for text in ("今年的目标是把 Rust 学到能写 CLI 工具", "我习惯用 Neovim 写代码", "周末不安排 on-call", "我的时区是 UTC+8"):
            assert m.remember_many([{"content": text}])[0][1] == "created", text
        cache = m.remember("Redis caches the product pages for 10 minutes")
        limiter, action = m.remember_many([{"content": "Redis also backs the rate limiter, 100 requests per minute"}])[0]
        assert action == "related" and [r["id"] for r in m.related(limiter.id)] == [cache.id]
        hits = m.recall("product page cache", top_k=1, expand=True, touch=False)
        assert [h.memory.id for h in hits] == [cache.id, limiter.id]  # nothing unrelated comes along
        assert hits[1].via == cache.id and hits[1].link is not None and hits[1].link["kind"] == "related"
        assert hits[1].to_dict()["link"]["kind"] == "related"


@pytest.mark.model
def test_an_unsure_change_is_a_possible_conflict_settled_by_a_person(store_target: str, real: Any) -> None:
    with fresh(store_target, real) as m:
        old = m.remember("我的名字是张伟，时区是 UTC+8")
        new, action = m.remember_many([{"content": "我现在的时区是 UTC-5"}])[0]
        assert action == "related" and m.get(old.id).status == "active"  # the name must not disappear
        [c] = m.conflicts()
        assert (c["new"].id, c["old"].id) == (new.id, old.id)
        m.resolve(new.id, supersede=False)
        assert m.conflicts() == [] and m.get(old.id).status == "active"


@pytest.mark.model
def test_restore_never_leaves_both_a_memory_and_its_replacement_active(store_target: str, real: Any) -> None:
    with fresh(store_target, real) as m:
        old = m.remember("The API server listens on port 8080")
        new, action = m.remember_many([{"content": "The API server listens on port 9090"}])[0]
        assert action == "superseded"
        m.restore(old.id)
        assert (m.get(old.id).status, m.get(new.id).status) == ("active", "superseded")
        assert [h.memory.id for h in m.recall("API server port", touch=False)][:1] == [old.id]
        assert [e["kind"] for e in m.history(new.id)][-1] == "superseded"  # recorded, and reversible
        m.restore(new.id)
        assert (m.get(old.id).status, m.get(new.id).status) == ("superseded", "active")


@pytest.mark.model
def test_consolidation_of_a_mixed_store_hides_no_fact_and_is_undone_whole(store_target: str, real: Any) -> None:
    rows = [json.loads(line) for line in (DATA / "mixed_store.jsonl").read_text("utf-8").splitlines() if line.strip()]
    fragments = [  # one real topic among the 30 unrelated memories, with a fact outside the central three
        ("The deploy pipeline builds the Docker image", "Docker image"),
        ("The deploy pipeline runs the integration tests", "integration tests"),
        ("The deploy pipeline pushes the Docker image to the registry", "registry"),
        ("The deploy pipeline posts to #deploys when it finishes", "#deploys"),
        ("The deploy pipeline runs on every merge to main", "every merge"),
        ("The deploy pipeline retries a failed step twice", "twice"),
    ]
    with fresh(store_target, real) as m:
        ids = [m.remember(r["content"], type=r["type"], dedup=False).id for r in rows]
        ids += [m.remember(text, dedup=False).id for text, _ in fragments]
        probes = [(r["probe"], r["fact"]) for r in rows] + list(fragments)

        def found() -> set[str]:
            return {probe for probe, fact in probes if any(fact in h.memory.content for h in m.recall(probe, top_k=5, touch=False))}

        before = found()
        assert len(before) >= 0.8 * len(probes), sorted(set(p for p, _ in probes) - before)  # recall itself is issue 15
        done = m.consolidate(apply=True)
        archived = [i for g in done["groups"] for i in g["archive"]]
        deploy = [g for g in done["groups"] if set(g["sources"]) <= set(ids[len(rows):])]
        assert deploy and len(deploy[0]["archive"]) >= 2  # the one real topic was folded…
        assert all(k["lost"] for g in done["groups"] for k in g["keep"])  # …keeping what the summary lacks
        for g in done["groups"]:
            assert not set(g["archive"]) & {k["id"] for k in g["keep"]}
        # every key fact found before is still found by a search, in its memory or in the summary
        assert found() >= before
        # no group mixes the unrelated memories of the mixed store with each other
        for g in done["groups"]:
            mixed = [i for i in g["sources"] if i in ids[: len(rows)]]
            assert len(mixed) <= 1, [m.get(i).content for i in g["sources"]]
        for g in done["groups"]:
            if g.get("summary_id"):
                m.restore(g["summary_id"])
        assert all(m.get(i).status == "active" for i in ids)
        assert len(archived) == 0 or all(m.get(g["summary_id"]).status == "archived" for g in done["groups"] if g.get("summary_id"))


# ---------------------------------------------------------------- scope on every surface

def _repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def test_scope_precedence_and_the_scope_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> None:
    from mnemo._settings.scope import resolve_scope

    repo = _repo(tmp_path / "shop")
    (repo / "src").mkdir()
    assert resolve_scope(repo / "src") .scope == project_scope(repo)
    assert resolve_scope(tmp_path / "nowhere", configured="project:cfg").scope == "project:cfg"
    assert resolve_scope(tmp_path / "nowhere").scope == "global"
    assert resolve_scope(repo, explicit="project:flag").scope == "project:flag"
    (repo / ".mnemo.toml").write_text('scope = "project:shared"\n', "utf-8")
    assert resolve_scope(repo / "src").scope == "project:shared"

    monkeypatch.chdir(repo / "src")
    out = cli("scope", "--json").json()
    assert out["scope"] == "project:shared" and ".mnemo.toml" in out["why"]
    saved = cli("save", "We use pnpm", "--json").json()["memory"]
    assert saved["scope"] == "project:shared"  # the CLI inside a repository writes to its scope
    assert cli("recent").out.splitlines()[0] == "scope: project:shared + global"
    monkeypatch.setenv("MNEMO_SCOPE", "project:env")
    assert cli("scope", "--json").json() == {"scope": "project:env", "why": "MNEMO_SCOPE", "folder": str(repo / "src")}


def _mcp(cwd: Path, script: Any, roots: list[Path] | None = None) -> Any:
    from mcp_client import run_session

    return run_session(script, errlog=cwd.parent / f"mcp-stderr-{cwd.name}.log", cwd=cwd, roots=roots)


def _hook(event: str, cwd: Path, prompt: str = "") -> str:
    body = {"session_id": f"{event}-{cwd.name}", "transcript_path": str(cwd / "none.jsonl"), "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit" if event == "user-prompt" else "SessionStart", "prompt": prompt, "source": "startup"}
    r = subprocess.run([MNEMO, "hook", event], input=json.dumps(body), capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MNEMO_SERVE_IDLE_SECONDS": "0"})
    assert r.returncode == 0 and not r.stderr, r.stderr
    return json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"] if r.stdout.strip() else ""


def test_mcp_and_hooks_keep_two_repositories_apart(tmp_path: Path) -> None:
    from test_mcp import _data

    shop, blog = _repo(tmp_path / "shop"), _repo(tmp_path / "blog")

    async def save_in_shop(client: Any) -> Any:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert project_scope(shop) in tools["remember"].description  # the tool names the resolved scope
        saved = _data(await client.call_tool("remember", {"content": "The shop database is PostgreSQL 16 on port 5433", "type": "decision"}))
        found = _data(await client.call_tool("recall", {"query": "shop database port"}))
        return saved, found

    saved, found = _mcp(shop, save_in_shop)
    assert saved["memory"]["scope"] == project_scope(shop)
    assert [r["id"] for r in found["results"]] == [saved["memory"]["id"]]

    async def save_by_root(client: Any) -> Any:
        return _data(await client.call_tool("remember", {"content": "The blog is built with Hugo and deployed to Netlify", "type": "decision"}))

    # started elsewhere (as a client may start it), the server takes the client's root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_root = _mcp(elsewhere, save_by_root, roots=[blog])
    assert by_root["memory"]["scope"] == project_scope(blog)

    # the hooks: each repository's prompts get its own memories, never the other's
    shop_text = _hook("user-prompt", shop, "which database and port does the shop use? and the blog?")
    blog_text = _hook("user-prompt", blog, "how is the blog built and which database does the shop use?")
    assert "PostgreSQL 16" in shop_text and "Hugo" not in shop_text
    assert "Hugo" in blog_text and "PostgreSQL 16" not in blog_text
    start_shop, start_blog = _hook("session-start", shop), _hook("session-start", blog)
    assert "PostgreSQL 16" in start_shop and "Hugo" not in start_shop
    assert "Hugo" in start_blog and "PostgreSQL 16" not in start_blog


def test_consolidation_over_mcp_only_previews_unless_allowed(tmp_path: Path) -> None:
    from test_mcp import _data

    repo = _repo(tmp_path / "app")

    async def script(client: Any) -> Any:
        for text in ("weekly report goes out on friday", "weekly report lists the open incidents", "weekly report includes the on-call log"):
            await client.call_tool("remember", {"content": text})
        preview = _data(await client.call_tool("consolidate", {}))
        applied = await client.call_tool("consolidate", {"apply": True})
        return preview, applied

    preview, applied = _mcp(repo, script)
    assert preview["applied"] is False
    assert applied.is_error and "mcp_consolidate_apply" in applied.content[0].text


# ---------------------------------------------------------------- re-injection after compaction

def test_reinjection_after_compaction_ranks_by_importance_and_relevance_and_keeps_room_for_key_memories(m: Mnemo, tmp_path: Path) -> None:
    from mnemo._hooks.handlers import run_hook

    key = m.remember("Never push directly to the main branch", type="constraint", importance=0.7)
    topical = [m.remember(f"The reporting database replica {i} is PostgreSQL read-only", importance=0.3 + i * 0.05).id for i in range(10)]
    chatter = [m.remember(f"Lunch menu item {i} is noodles", importance=0.9).id for i in range(4)]  # important, off the session's topic
    session = {"session_id": "s-compact", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path)}
    settings = {"context_top_k": 5, "context_budget_tokens": 2000}
    m.context("which postgresql database replica serves the reports?", session="s-compact", top_k=50, budget_tokens=5000)
    m.context("noodles", session="s-compact", top_k=4, budget_tokens=5000)  # a long session injected both kinds
    run_hook(m, "pre-compact", {**session, "hook_event_name": "PreCompact", "trigger": "auto"}, settings)
    out = run_hook(m, "session-start", {**session, "hook_event_name": "SessionStart", "source": "compact"}, settings)
    got = out["memory_ids"]
    again = [i for i in got if i in topical + chatter]
    assert key.id in got  # room is left for the scope's key memories
    assert again and len(again) < len(got)
    # what the session asked about comes first, and among it the more important; the noodles only after
    assert again[: len([i for i in again if i in topical])] == [i for i in again if i in topical]
    ranked = [i for i in again if i in topical]
    assert ranked == sorted(ranked, key=lambda i: -m.get(i).importance) and ranked[0] == topical[-1]
    log = m.log(session="s-compact", limit=1)[0]
    assert all("re-injected after compaction" in log["data"]["reasons"][i] for i in again)
