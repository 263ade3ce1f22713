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
    m.restore(a.id)  # the old statement is current again; its replacement steps aside (never both active)
    assert m.get(a.id).status == "active" and _counts(m) == {"active": 1, "superseded": 1}
    assert m.get(b.id).status == "superseded" and m.get(b.id).superseded_by == a.id
    m.restore(b.id)  # and back: reversible the same way
    assert m.get(b.id).status == "active" and m.get(a.id).status == "superseded" and _counts(m) == {"active": 1, "superseded": 1}


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
    assert cli("review", "--json").json() == {"scope": "global", "expired": [], "possible_conflicts": []}
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
    assert len(dry["groups"]) == 1 and set(dry["groups"][0]["sources"]) <= set(ids) and len(dry["groups"][0]["sources"]) >= 3
    assert m.stats()["by_status"] == {"active": 5}  # a dry run changes nothing
    group = dry["groups"][0]
    # the extractive summary holds the three most central statements: a source outside them is
    # not archived, and the report says what the summary lacks of it
    assert len(group["archive"]) == 3 and set(group["archive"]) | {k["id"] for k in group["keep"]} == set(group["sources"])
    assert all(k["lost"] for k in group["keep"])
    done = m.consolidate(scope="project:ci", apply=True)
    summary = m.get(done["groups"][0]["summary_id"])
    assert summary.source == "consolidate" and "deploy pipeline" in summary.content
    assert {r["id"] for r in m.related(summary.id) if r["kind"] == "derived_from"} == set(group["archive"])
    assert all(m.get(i).status == ("archived" if i in group["archive"] else "active") for i in ids)
    assert m.stats()["all_records"] == 6  # nothing deleted
    m.restore(group["archive"][0])
    assert m.get(group["archive"][0]).status == "active"
    m.restore(summary.id)  # undoes the whole consolidation: every source back, the summary archived
    assert all(m.get(i).status == "active" for i in ids) and m.get(summary.id).status == "archived"


def test_cli_consolidate_dry_run(cli) -> None:
    for f in ("weekly report goes out on friday", "weekly report lists the open incidents", "weekly report includes the on-call log"):
        assert cli("save", f, "--no-dedup").code == 0
    r = cli("consolidate", "--json")
    assert r.code == 0 and r.json()["applied"] is False and len(r.json()["groups"]) == 1
