"""The lifecycle rules, in Chinese and English, through the API and the CLI; every step
reversible and nothing lost (counts and history checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import InvalidInputError, Mnemo


def _counts(m: Mnemo) -> dict[str, int]:
    return m.stats()["by_status"]


# ---------------------------------------------------------------- dedup on write

@pytest.mark.parametrize(
    ("first", "repeat"),
    [
        ("We deploy with GitHub Actions to a single VPS", "we deploy with github actions to a single vps!"),
        ("项目使用 FastAPI 和 PostgreSQL", "項目使用 FastAPI 和 PostgreSQL"),  # traditional = simplified
        ("I prefer tabs over spaces in Python code", "In Python code I prefer tabs over spaces"),  # same words, new order
    ],
)
def test_repeats_merge_and_can_be_split_again(m: Mnemo, first: str, repeat: str) -> None:
    a = m.remember(first, tags=["x"], importance=0.5)
    out = m.remember_many([{"content": repeat, "tags": ["y"]}])
    assert out[0][1] == "merged" and out[0][0].id == a.id
    merged = m.get(a.id)
    assert merged.tags == ["x", "y"] and merged.importance > 0.5
    assert _counts(m) == {"active": 1}
    assert [e["kind"] for e in m.history(a.id)][-1] == "merged"
    m.restore(a.id)  # un-merge: the repeat becomes its own memory again, the original as it was
    assert _counts(m) == {"active": 2}
    back = m.get(a.id)
    assert back.tags == ["x"] and back.importance == 0.5
    with pytest.raises(InvalidInputError, match="nothing to restore"):
        m.restore(a.id)


def test_similar_but_different_memories_are_linked(m: Mnemo) -> None:
    a = m.remember("The staging database is PostgreSQL on port 5433")
    mem, action = m.remember_many([{"content": "The staging database backups run nightly at 2am"}])[0]
    assert action == "related"
    assert [(r["id"], r["kind"]) for r in m.related(mem.id)] == [(a.id, "related")]
    assert _counts(m) == {"active": 2}
    hits = m.recall("nightly backups schedule", expand=True, min_score=0.0, touch=False)
    assert [h.memory.id for h in hits][:2] == [mem.id, a.id] or a.id in {h.memory.id for h in hits if h.via}


def test_unrelated_memories_are_just_created(m: Mnemo) -> None:
    m.remember("We deploy with GitHub Actions")
    _, action = m.remember_many([{"content": "我喜欢喝乌龙茶"}])[0]
    assert action == "created"


def test_import_keeps_every_record_unless_asked(m: Mnemo, tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_text('{"id": "a", "content": "we deploy on fridays"}\n{"id": "b", "content": "We deploy on Fridays!"}\n', "utf-8")
    assert m.import_(f)["imported"] == 2
    other = Mnemo(tmp_path / "other.db", embedder=m.embedder)
    assert other.import_(f, dedup=True)["imported"] == 1
    other.close()


# ---------------------------------------------------------------- supersede

@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("项目采用 A 方案", "项目改用 B 方案"),
        ("We write the frontend in JavaScript", "We switched the frontend from JavaScript to TypeScript"),
        ("The API server listens on port 8080", "The API server listens on port 9090"),
        ("缓存用 Redis", "缓存不再使用 Redis，改用本地内存"),
    ],
)
def test_a_replacing_statement_supersedes_and_can_be_undone(m: Mnemo, old: str, new: str) -> None:
    a = m.remember(old, scope="project:x")
    b, action = m.remember_many([{"content": new, "scope": "project:x"}])[0]
    assert action == "superseded", (old, new)
    gone = m.get(a.id)
    assert gone.status == "superseded" and gone.superseded_by == b.id
    assert [h.memory.id for h in m.recall(old, scope="project:x", min_score=0.01, touch=False)] == [b.id]
    assert a.id in {h.memory.id for h in m.recall(old, scope="project:x", min_score=0.0, include_superseded=True, touch=False)}
    assert [e["kind"] for e in m.history(a.id)] == ["created", "superseded"]
    m.restore(a.id)
    assert m.get(a.id).status == "active" and _counts(m) == {"active": 2}


def test_supersede_stays_inside_a_scope(m: Mnemo) -> None:
    a = m.remember("The API server listens on port 8080", scope="project:one")
    _, action = m.remember_many([{"content": "The API server listens on port 9090", "scope": "project:two"}])[0]
    assert action != "superseded" and m.get(a.id).status == "active"


# ---------------------------------------------------------------- edit, expiry, archive

def test_edit_keeps_the_old_version_and_restore_reverts_it(m: Mnemo) -> None:
    a = m.remember("the release is on Monday", type="fact")
    m.edit(a.id, content="the release is on Tuesday", importance=0.9)
    assert m.get(a.id).content == "the release is on Tuesday"
    assert [h.memory.id for h in m.recall("Tuesday release", mode="fts", touch=False)] == [a.id]
    upd = [e for e in m.history(a.id) if e["kind"] == "updated"][0]
    assert upd["data"]["before"]["content"] == "the release is on Monday"
    m.restore(a.id)
    back = m.get(a.id)
    assert back.content == "the release is on Monday" and back.importance == 0.5
    assert [h.memory.id for h in m.recall("Monday release", mode="fts", touch=False)] == [a.id]


def test_expired_memories_wait_for_review(m: Mnemo) -> None:
    a = m.remember("the office wifi password rotates monthly", expires="30d")
    assert a.expires_at and m.recall("office wifi", min_score=0.0, touch=False)
    later = "2099-01-01T00:00:00Z"
    assert m.recall("office wifi", min_score=0.01, now=later, touch=False) == []
    assert [x.id for x in m.review(now=later)] == [a.id]
    renewed = m.confirm(a.id, now=later)
    assert renewed.expires_at and renewed.expires_at > a.expires_at  # the same 30 days, from now


def test_gc_archives_unused_memories_but_not_important_or_pinned_ones(m: Mnemo) -> None:
    old = m.remember("an old note nobody reads")
    keep = m.remember("a key decision", importance=0.9)
    pinned = m.remember("a pinned reminder", pinned=True)
    later = "2099-01-01T00:00:00Z"
    dry = m.gc(now=later)
    assert [x["id"] for x in dry["archive"]] == [old.id] and m.get(old.id).status == "active"
    m.gc(now=later, apply=True)
    assert m.get(old.id).status == "archived" and m.get(keep.id).status == m.get(pinned.id).status == "active"
    assert m.recall("old note nobody reads", min_score=0.01, touch=False) == []
    assert m.recall("old note nobody reads", min_score=0.0, include_archived=True, touch=False)
    m.restore(old.id)
    assert m.get(old.id).status == "active"
    assert [e["kind"] for e in m.history(old.id)] == ["created", "archived", "restored"]


def test_freshly_ingested_old_notes_are_not_archived(m: Mnemo) -> None:
    m.remember("a note written in 2015", created_at="2015-01-01T00:00:00Z")
    assert m.gc()["archive"] == []  # age counts from when it entered the store


# ---------------------------------------------------------------- through the CLI

def test_cli_lifecycle(cli) -> None:
    a = cli("save", "项目采用 A 方案", "--scope", "project:x", "--json").json()["memory"]["id"]
    r = cli("save", "项目采用 A 方案。", "--scope", "project:x")
    assert r.code == 0 and f"merged into {a}" in r.out
    r = cli("save", "项目改用 B 方案", "--scope", "project:x", "--json")
    assert r.json()["action"] == "superseded" and r.json()["links"][0]["id"] == a
    show = cli("show", a, "--json").json()
    assert show["memory"]["status"] == "superseded" and show["links"][0]["kind"] == "supersedes"
    assert cli("restore", a).code == 0
    b = cli("save", "release notes are written by Ana", "--json").json()["memory"]["id"]
    assert cli("edit", b, "--content", "release notes are written by Bo").code == 0
    assert "Bo" in cli("show", b, "--json").json()["memory"]["content"]
    assert cli("restore", b).code == 0 and "Ana" in cli("show", b, "--json").json()["memory"]["content"]
    assert cli("edit", b).code == 2  # nothing to change
    r = cli("gc", "--json")
    assert r.code == 0 and r.json()["applied"] is False
    r = cli("save", "temporary token policy", "--expires", "1d", "--json")
    assert r.json()["memory"]["expires_at"]
    assert cli("review", "--json").json() == []
    assert cli("confirm", r.json()["memory"]["id"], "--expires", "2099-01-01").code == 0


def test_consolidate_groups_fragments_into_a_summary(m: Mnemo) -> None:
    frags = [
        "deploy pipeline builds the docker image",
        "deploy pipeline runs the integration tests",
        "deploy pipeline pushes the docker image to the registry",
        "deploy pipeline notifies the team channel",
    ]
    ids = [m.remember(f, scope="project:ci", dedup=False).id for f in frags]
    m.remember("我喜欢喝乌龙茶", scope="project:ci")
    dry = m.consolidate(scope="project:ci")
    assert len(dry["groups"]) == 1 and sorted(dry["groups"][0]["sources"]) == sorted(ids)
    assert m.stats()["by_status"] == {"active": 5}  # a dry run changes nothing
    done = m.consolidate(scope="project:ci", apply=True)
    summary = m.get(done["groups"][0]["summary_id"])
    assert summary.source == "consolidate" and "deploy pipeline" in summary.content
    assert {r["id"] for r in m.related(summary.id) if r["kind"] == "derived_from"} == set(ids)
    assert all(m.get(i).status == "archived" for i in ids)
    assert m.stats()["all_records"] == 6  # nothing deleted
    m.restore(ids[0])
    assert m.get(ids[0]).status == "active"


def test_cli_consolidate_dry_run(cli) -> None:
    for f in ("weekly report goes out on friday", "weekly report lists the open incidents", "weekly report includes the on-call log"):
        assert cli("save", f, "--no-dedup").code == 0
    r = cli("consolidate", "--json")
    assert r.code == 0 and r.json()["applied"] is False and len(r.json()["groups"]) == 1


# ---------------------------------------------------------------- restatements below the near-repeat cosine

@pytest.mark.parametrize("old,new", [
    ("CI 流水线必须在十分钟内跑完。", "CI 必须在 10 分钟以内完成。"),
    ("The CI pipeline must finish in under 10 minutes.", "CI must take less than ten minutes."),
    ("We use PostgreSQL 15 as the main database.", "主数据库用的是 PostgreSQL 15。"),
    ("The frontend is built with React and Vite.", "Frontend stack: React + Vite."),
    ("本季度目标：把接口 P95 延迟降到 200 毫秒以下。", "这个季度的目标是接口 P95 延迟低于 200ms。"),
])
def test_restatements_are_recognised(old: str, new: str) -> None:
    from mnemo._lifecycle import restates

    assert restates(old, new)


@pytest.mark.parametrize("old,new", [
    ("The API server listens on port 8080.", "The API server listens on port 8081."),  # changed number
    ("The frontend team lead is Maria.", "The backend team lead is David."),  # other names
    ("我们用 Redis 做缓存。", "我们用 Redis 做缓存，也用它做分布式锁。"),  # a detail added, nothing reworded
    ("团队周会在周一上午十点。", "支付回调的超时时间是 10 秒。"),  # only a number in common
    ("我家的猫叫年糕。", "年糕每年三月要打疫苗。"),  # no number or Latin name to pin the fact down
])
def test_new_facts_are_not_restatements(old: str, new: str) -> None:
    from mnemo._lifecycle import restates

    assert not restates(old, new)


def test_fact_anchors_normalise_numbers_and_names() -> None:
    from mnemo._lifecycle import fact_anchors

    assert fact_anchors("CI 流水线必须在十分钟内跑完。") == {"ci", "10"}
    assert fact_anchors("CI must take less than ten minutes.") == {"ci", "10"}
    assert fact_anchors("主要客户是一家杭州的物流公司。") == set()  # 一家 is "a", not 1
    assert fact_anchors("I live in Berlin.") == {"berlin"}


@pytest.mark.parametrize("old,new", [
    ("The Kafka 'clicks' topic has 6 partitions.", "The Kafka 'orders' topic has 6 partitions."),  # quoted names
    ("生产数据库每天凌晨三点备份。", "测试数据库每天凌晨三点备份。"),  # parallel environments
    ("The iOS release goes out on Thursday.", "The Android release goes out on Thursday."),
])
def test_parallel_subjects_are_never_the_same_fact(old: str, new: str) -> None:
    from mnemo._lifecycle import same_subject

    assert not same_subject(old, new)


def test_names_count_in_both_statements_and_numbers_are_normalised() -> None:
    from mnemo._lifecycle import restates, same_subject

    assert same_subject("Alice owns the billing service.", "The billing service is owned by Alice.")
    assert restates("Daily standup is at 9:30 am.", "Daily standup: 09:30.")
    assert restates("生产环境 Redis 的 maxmemory 是 16GB。", "记住：生产 Redis 的 maxmemory 设为 16 GB。")


def test_borrowed_english_in_chinese_is_not_a_name_but_tools_are() -> None:
    from mnemo._lifecycle import restates, same_subject

    assert same_subject("不要直接往 main 分支推代码。", "记住：不要直接 push 到 main 分支。")  # "push" is borrowed English
    assert not same_subject("我们用 pnpm 管理依赖。", "我们用 npm 管理依赖。")  # two tools: both sides name one
    assert not restates("The payments service is written in Go.", "The payments service is written in Rust.")
    assert restates("The payments service is written in Go.", "Note: the payments service is implemented in Go.")
