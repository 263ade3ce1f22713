"""The Python API: ``Mnemo(path)`` and its operations, on the fake embedder."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from fake_embedder import DIM, FakeEmbedder, unrelated_query

from mnemo import MEMORY_TYPES, Hit, InvalidInputError, Memory, Mnemo, ModelMismatchError, NotFoundError


class OtherEmbedder(FakeEmbedder):
    """A second model: another identity, another dimension, another hashing."""

    name = "other-hash-48"
    dim = 48

    def _vec(self, text: str) -> np.ndarray:
        base = super()._vec("salt " + text)  # a different space than FakeEmbedder's
        v = base[:48].copy()
        n = np.linalg.norm(v)
        return v / n if n else v


def ids(hits: list[Hit]) -> list[str]:
    return [h.memory.id for h in hits]




# ---------------------------------------------------------------- remember / recall


def test_remember_returns_memory_and_recall_finds_it(m: Mnemo) -> None:
    mem = m.remember(
        "We deploy with GitHub Actions to a single VPS",
        type="decision",
        scope="project:app",
        tags=["ci", "deploy"],
        importance=0.8,
        metadata={"k": 1},
    )
    assert isinstance(mem, Memory)
    assert mem.id.startswith("mem_")
    assert (mem.type, mem.scope, mem.tags, mem.importance, mem.status) == ("decision", "project:app", ["ci", "deploy"], 0.8, "active")
    assert mem.created_at.endswith("Z") and mem.updated_at.endswith("Z")
    assert mem.metadata == {"k": 1}

    hits = m.recall("how do we deploy? GitHub Actions", scope="project:app")
    assert ids(hits) == [mem.id]
    hit = hits[0]
    assert 0 < hit.score <= 2 and hit.similarity is not None
    assert hit.memory.content == "We deploy with GitHub Actions to a single VPS"
    d = hit.to_dict()
    assert d["id"] == mem.id and "score" in d and "similarity" in d and "explain" not in d

    got = m.get(mem.id)
    assert got.content == mem.content and got.tags == ["ci", "deploy"] and got.metadata == {"k": 1}


def test_remember_strips_content_and_accepts_tag_string(m: Mnemo) -> None:
    mem = m.remember("   spaced out note \n", tags=" a, b ,a,, ")
    assert mem.content == "spaced out note"
    assert mem.tags == ["a", "b"]
    assert m.get(mem.id).tags == ["a", "b"]


@pytest.mark.parametrize("mtype", MEMORY_TYPES)
def test_every_builtin_type_is_accepted(m: Mnemo, mtype: str) -> None:
    assert m.remember(f"a memory of type {mtype}", type=mtype).type == mtype


def test_exact_repeat_is_merged_not_duplicated(m: Mnemo) -> None:
    first = m.remember("Use pytest for tests", tags=["testing"], importance=0.4, scope="project:a")
    # same text after normalisation: case, full-width letters, whitespace
    (again, action), = m.remember_many([dict(content="  use   PYTEST for tests ", tags=["python"], importance=0.9, scope="project:a")])
    assert action == "merged"
    assert again.id == first.id
    assert again.tags == ["testing", "python"]
    stored = m.get(first.id)
    assert stored.tags == ["testing", "python"]
    assert stored.importance == pytest.approx(0.95)  # the higher importance, nudged up: a repeat matters more
    assert stored.content == "Use pytest for tests"  # the original text is kept
    assert m.stats()["total"] == 1
    kinds = [e["kind"] for e in m.history(first.id)]
    assert kinds == ["created", "merged"]


def test_same_text_in_another_scope_is_a_separate_memory(m: Mnemo) -> None:
    a = m.remember("Use pytest for tests", scope="project:a")
    (b, action), = m.remember_many([dict(content="Use pytest for tests", scope="project:b")])
    assert action == "created" and b.id != a.id
    assert m.stats()["total"] == 2


def test_repeat_within_one_batch_is_merged(m: Mnemo) -> None:
    out = m.remember_many([dict(content="Redis streams carry events", tags=["a"]), dict(content="redis streams carry events", tags=["b"])])
    assert [action for _, action in out] == ["created", "merged"]
    assert out[0][0].id == out[1][0].id
    assert m.get(out[0][0].id).tags == ["a", "b"]
    assert m.stats()["total"] == 1


def test_repeat_of_a_forgotten_memory_creates_a_new_one(m: Mnemo) -> None:
    old = m.remember("The cache lives in Redis")
    m.forget(old.id)
    (new, action), = m.remember_many([dict(content="The cache lives in Redis")])
    assert action == "created" and new.id != old.id
    assert m.get(old.id).status == "deleted"


def test_remember_many_is_all_or_nothing(m: Mnemo) -> None:
    m.remember("already here")
    with pytest.raises(InvalidInputError):
        m.remember_many([dict(content="fine one"), dict(content="bad type", type="nonsense")])
    assert m.stats()["total"] == 1
    assert [x.content for x in m.list()] == ["already here"]


def test_given_id_and_created_at_are_kept(m: Mnemo) -> None:
    mem = m.remember("from an older system", id="legacy-1", created_at="2023-05-08T13:56:00Z")
    assert mem.id == "legacy-1"
    assert m.get("legacy-1").created_at == "2023-05-08T13:56:00Z"
    with pytest.raises(InvalidInputError, match="already exists"):
        m.remember("different text, same id", id="legacy-1")


# ---------------------------------------------------------------- scopes


@pytest.fixture
def scoped(m: Mnemo) -> dict[str, str]:
    made = {
        "a": m.remember("database migrations run with alembic", scope="project:a").id,
        "b": m.remember("database migrations run with flyway", scope="project:b").id,
        "g": m.remember("database migrations should always be reversible", scope="global").id,
    }
    # unrelated filler in a third project keeps full-text statistics (IDF) meaningful
    m.remember_many([dict(content=f"filler note {i} about lunch", scope="project:filler") for i in range(5)])
    return made


def test_project_query_sees_its_scope_and_global_only(m: Mnemo, scoped: dict[str, str]) -> None:
    got_a = set(ids(m.recall("database migrations", scope="project:a", top_k=10)))
    assert got_a == {scoped["a"], scoped["g"]}
    got_b = set(ids(m.recall("database migrations", scope="project:b", top_k=10)))
    assert got_b == {scoped["b"], scoped["g"]}


def test_project_query_never_returns_other_project_even_on_exact_words(m: Mnemo, scoped: dict[str, str]) -> None:
    for mode in ("hybrid", "vector", "fts"):
        assert scoped["b"] not in ids(m.recall("flyway", scope="project:a", top_k=10, mode=mode))
        assert scoped["a"] not in ids(m.recall("alembic", scope="project:b", top_k=10, mode=mode))
    assert ids(m.recall("flyway", scope="project:b", mode="fts")) == [scoped["b"]]


def test_global_query_sees_only_global(m: Mnemo, scoped: dict[str, str]) -> None:
    assert set(ids(m.recall("database migrations", scope="global", top_k=10))) == {scoped["g"]}
    assert set(ids(m.recall("database migrations", top_k=10))) == {scoped["g"]}  # the store's default scope


def test_scope_all_sees_everything(m: Mnemo, scoped: dict[str, str]) -> None:
    assert set(ids(m.recall("database migrations", scope="all", top_k=10))) == set(scoped.values())


def test_unknown_project_scope_sees_global(m: Mnemo, scoped: dict[str, str]) -> None:
    assert set(ids(m.recall("database migrations", scope="project:zzz", top_k=10))) == {scoped["g"]}


def test_default_scope_of_the_store(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder(), scope="project:a") as a:
        mem = a.remember("alembic runs the migrations")
        assert mem.scope == "project:a"
        g = a.remember("migrations must be reversible", scope="global")
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder(), scope="project:b") as b:
        b.remember("flyway runs the migrations")
        got = {h.memory.content for h in b.recall("migrations", top_k=10)}
        assert got == {"flyway runs the migrations", "migrations must be reversible"}
        assert {x.content for x in b.list(scope=None)} == got
        assert {x.content for x in b.recent(days=1)} == got
        assert g.id in {x.id for x in b.list()}  # list defaults to every scope


def test_scope_all_cannot_be_written_and_bad_scopes_are_refused(m: Mnemo) -> None:
    with pytest.raises(InvalidInputError):
        m.remember("x", scope="all")
    with pytest.raises(InvalidInputError):
        m.remember("x", scope="   ")
    with pytest.raises(InvalidInputError):
        m.remember("x", scope="bad\nscope")
    assert m.stats()["all_records"] == 0


# ---------------------------------------------------------------- filters


@pytest.fixture
def dated(m: Mnemo) -> dict[str, str]:
    return {
        "jan": m.remember("kafka topic naming rule", type="constraint", tags=["kafka", "naming"], created_at="2024-01-10T12:00:00Z").id,
        "mar": m.remember("kafka consumer group decision", type="decision", tags=["kafka"], created_at="2024-03-10T12:00:00Z").id,
        "jun": m.remember("kafka retention note", type="note", tags=["ops"], created_at="2024-06-10T12:00:00Z").id,
    }


def test_type_filter(m: Mnemo, dated: dict[str, str]) -> None:
    assert ids(m.recall("kafka", types=["decision"], top_k=10)) == [dated["mar"]]
    assert set(ids(m.recall("kafka", types="decision,constraint", top_k=10))) == {dated["mar"], dated["jan"]}
    assert [x.id for x in m.list(types=["note"])] == [dated["jun"]]
    with pytest.raises(InvalidInputError, match="unknown type"):
        m.recall("kafka", types=["nonsense"])


def test_tag_filter(m: Mnemo, dated: dict[str, str]) -> None:
    assert set(ids(m.recall("kafka", tags=["kafka"], top_k=10))) == {dated["jan"], dated["mar"]}
    assert ids(m.recall("kafka", tags="kafka,naming", top_k=10)) == [dated["jan"]]
    assert ids(m.recall("kafka", tags=["ops"], top_k=10, mode="vector")) == [dated["jun"]]
    assert [x.id for x in m.list(tags=["ops"])] == [dated["jun"]]
    assert m.recall("kafka", tags=["nope"]) == []


def test_time_filters(m: Mnemo, dated: dict[str, str]) -> None:
    assert set(ids(m.recall("kafka", since="2024-02-01T00:00:00Z", top_k=10))) == {dated["mar"], dated["jun"]}
    assert set(ids(m.recall("kafka", until="2024-02-01T00:00:00Z", top_k=10))) == {dated["jan"]}
    assert ids(m.recall("kafka", since="2024-02-01T00:00:00Z", until="2024-05-01T00:00:00Z", top_k=10)) == [dated["mar"]]
    assert ids(m.recall("kafka", since="2024-02-01T00:00:00Z", until="2024-05-01T00:00:00Z", top_k=10, mode="vector")) == [dated["mar"]]
    # since is inclusive, until exclusive
    assert ids(m.recall("kafka", since="2024-03-10T12:00:00Z", until="2024-03-10T12:00:01Z", top_k=10)) == [dated["mar"]]
    assert m.recall("kafka", since="2024-03-10T11:00:00Z", until="2024-03-10T12:00:00Z", top_k=10) == []
    assert [x.id for x in m.list(since="2024-02-01T00:00:00Z")] == [dated["jun"], dated["mar"]]  # newest first
    with pytest.raises(InvalidInputError, match="since"):
        m.recall("kafka", since="last tuesday-ish")


def test_top_k_limits_and_is_validated(m: Mnemo) -> None:
    for i in range(6):
        m.remember(f"postgres tuning tip number {i}")
    assert len(m.recall("postgres tuning tip", top_k=3)) == 3
    for bad in (0, 1001):
        with pytest.raises(InvalidInputError):
            m.recall("postgres", top_k=bad)


# ---------------------------------------------------------------- forget / restore / history


def test_forget_and_restore(m: Mnemo) -> None:
    mem = m.remember("the staging database runs on port 5433")
    assert ids(m.recall("staging database port")) == [mem.id]

    gone = m.forget(mem.id)
    assert gone.status == "deleted"
    assert m.recall("staging database port") == []
    assert m.list() == []
    assert [x.id for x in m.list(statuses=("deleted",))] == [mem.id]
    assert m.get(mem.id).status == "deleted"  # get sees every status
    assert m.stats()["total"] == 0 and m.stats()["all_records"] == 1

    back = m.restore(mem.id)
    assert back.status == "active"
    assert ids(m.recall("staging database port")) == [mem.id]
    assert [e["kind"] for e in m.history(mem.id)] == ["created", "deleted", "restored"]


def test_history_events_have_time_cause_and_data(m: Mnemo) -> None:
    mem = m.remember("history matters", source="manual")
    m.forget(mem.id)
    m.forget(mem.id)  # forgetting twice records nothing new
    m.restore(mem.id)
    events = m.history(mem.id)
    assert [e["kind"] for e in events] == ["created", "deleted", "restored"]
    for e in events:
        assert set(e) >= {"kind", "at", "cause", "data"}
        assert e["at"].endswith("Z")
    assert events[0]["cause"] == "remember"
    assert events[1]["cause"] == "forget" and events[1]["data"] == {"from": "active"}
    assert events[2]["cause"] == "restore" and events[2]["data"] == {"from": "deleted"}


def test_restore_active_and_unknown_ids(m: Mnemo) -> None:
    mem = m.remember("still active")
    with pytest.raises(InvalidInputError, match="nothing to restore"):
        m.restore(mem.id)
    for op in (m.get, m.forget, m.restore, m.history):
        with pytest.raises(NotFoundError):
            op("mem_00000000_20240101_000000")
    assert [e["kind"] for e in m.history(mem.id)] == ["created"]


# ---------------------------------------------------------------- access counting


def test_recall_counts_an_access(m: Mnemo) -> None:
    mem = m.remember("Grafana dashboards live in the ops repo")
    assert m.get(mem.id).access_count == 0 and m.get(mem.id).last_accessed_at is None
    m.recall("grafana dashboards")
    m.recall("grafana dashboards")
    after = m.get(mem.id)
    assert after.access_count == 2
    assert after.last_accessed_at is not None and after.last_accessed_at.endswith("Z")


def test_recall_without_touch_and_recall_batch_do_not_count(m: Mnemo) -> None:
    mem = m.remember("Grafana dashboards live in the ops repo")
    assert ids(m.recall("grafana dashboards", touch=False)) == [mem.id]
    out = m.recall_batch([{"query": "grafana dashboards"}, {"query": "ops repo"}])
    assert [r["results"][0]["id"] for r in out] == [mem.id, mem.id]
    assert m.get(mem.id).access_count == 0
    assert m.get(mem.id).last_accessed_at is None


def test_recall_batch_keeps_order_qids_and_k(m: Mnemo) -> None:
    for i in range(5):
        m.remember(f"terraform module {i} manages the network")
    m.remember("the office coffee machine is broken")
    off_topic = unrelated_query([f"terraform module {i} manages the network" for i in range(5)] + ["the office coffee machine is broken"])
    m.recall("warm up", touch=False)  # the anchor vectors are embedded (and cached) on the first recall
    emb: FakeEmbedder = m.embedder  # type: ignore[assignment]
    before = emb.calls
    out = m.recall_batch(
        [
            {"qid": "q-net", "query": "terraform network module", "k": 2},
            {"query": "coffee machine"},
            {"qid": "q-none", "query": off_topic},
        ],
        top_k=4,
    )
    assert emb.calls - before == 1  # the queries were embedded in one batch
    assert [r["qid"] for r in out] == ["q-net", "2", "q-none"]
    assert len(out[0]["results"]) == 2 and all("terraform" in r["content"] for r in out[0]["results"])
    assert out[1]["results"][0]["content"] == "the office coffee machine is broken"
    assert 1 <= len(out[1]["results"]) <= 4  # top_k is the default k
    assert out[2]["results"] == []
    with pytest.raises(InvalidInputError, match="batch item 2"):
        m.recall_batch([{"query": "ok"}, {"qid": "x"}])


# ---------------------------------------------------------------- relevance floor and explain


SOFTWARE = [
    "We deploy the API with GitHub Actions to a single VPS",
    "The staging database is PostgreSQL on port 5433",
    "Use pytest for unit tests, not unittest",
    "Frontend is written in TypeScript with React",
    "Redis Stream carries the job queue",
]


def test_relevance_floor_returns_nothing_for_unrelated_query(m: Mnemo) -> None:
    m.remember_many([dict(content=c) for c in SOFTWARE])
    # sanity: a related query does find something, so the empty answer below means something
    assert ids(m.recall("which database does staging use?"))
    unrelated = unrelated_query(SOFTWARE)
    assert m.recall(unrelated) == []
    assert m.recall(unrelated, mode="vector") == []
    assert m.recall(unrelated, mode="fts") == []
    # the floor is on score: lifting it removes the weak hits, lowering it to 0 lets them in
    everything = m.recall("staging database", min_score=0.0, top_k=10, touch=False)
    strict = m.recall("staging database", min_score=0.99, touch=False)
    assert len(everything) >= len(strict)
    assert all(h.score >= 0.99 for h in strict)


def test_explain_has_every_component(m: Mnemo) -> None:
    m.remember_many([dict(content=c) for c in SOFTWARE if "Redis" not in c])
    m.remember("Redis Stream carries the job queue", importance=0.9)
    hits = m.recall("redis job queue", explain=True)
    assert hits[0].memory.content == "Redis Stream carries the job queue"
    e = hits[0].explain
    assert e is not None
    expected = {
        "similarity", "baseline", "bm25", "dense_relevance", "lexical_relevance", "relevance",
        "importance_factor", "confidence_factor", "recency_factor", "access_factor", "time_factor", "score",
    }
    assert set(e) >= expected
    assert e["bm25"] > 0 and e["lexical_relevance"] > 0 and e["dense_relevance"] > 0
    assert e["importance_factor"] > 1.0  # importance 0.9 raises the score
    product = e["relevance"] * e["importance_factor"] * e["confidence_factor"] * e["recency_factor"] * e["access_factor"] * e["time_factor"]
    assert product == pytest.approx(hits[0].score, rel=1e-3)
    assert e["score"] == pytest.approx(hits[0].score, abs=1e-4)
    assert hits[0].to_dict()["explain"] == e
    assert m.recall("redis job queue")[0].explain is None


def test_full_text_finds_an_exact_word_in_a_small_store(m: Mnemo) -> None:
    """A brand-new store holds one or two memories; searching a word one of them contains must find it."""
    one = m.remember("database migrations run with flyway")
    assert ids(m.recall("flyway", mode="fts")) == [one.id]
    m.remember("the office coffee machine is broken")
    assert ids(m.recall("flyway", mode="fts")) == [one.id]


def test_importance_orders_otherwise_equal_memories(m: Mnemo) -> None:
    low = m.remember("nginx config lives in /etc/nginx (copy one)", importance=0.1, dedup=False)
    high = m.remember("nginx config lives in /etc/nginx (copy two)", importance=1.0, dedup=False)
    got = ids(m.recall("nginx config", top_k=2, touch=False))
    assert got == [high.id, low.id]


def test_recall_rejects_bad_queries(m: Mnemo) -> None:
    for q in ("", "   "):
        with pytest.raises(InvalidInputError, match="empty"):
            m.recall(q)
    with pytest.raises(InvalidInputError):
        m.recall("x" * 40_000)
    with pytest.raises(InvalidInputError):
        m.recall("x", mode="magic")


def test_writes_from_another_handle_are_seen_by_the_next_recall(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as reader, Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as writer:
        writer.remember("first: helm charts live in deploy/")
        assert len(reader.recall("helm charts")) == 1
        second = writer.remember("second: helm charts are linted in CI")
        assert second.id in ids(reader.recall("helm charts", top_k=5))
        writer.forget(second.id)
        assert second.id not in ids(reader.recall("helm charts", top_k=5))


# ---------------------------------------------------------------- recent / list / stats


def test_recent(m: Mnemo) -> None:
    old = m.remember("an old note", created_at="2020-01-01T00:00:00Z")
    new1 = m.remember("a fresh note")
    new2 = m.remember("another fresh note", scope="project:x")
    got = [x.id for x in m.recent(days=7)]
    assert got == [new1.id]  # default scope global; project:x not visible
    assert {x.id for x in m.recent(days=7, scope="project:x")} == {new1.id, new2.id}
    assert {x.id for x in m.recent(days=7, scope="all")} == {new1.id, new2.id}
    assert old.id in {x.id for x in m.recent(days=365 * 100, scope="all")}
    assert len(m.recent(days=7, scope="all", limit=1)) == 1


def test_list_paging_and_statuses(m: Mnemo) -> None:
    made = [m.remember(f"note {i}", created_at=f"2024-01-0{i + 1}T00:00:00Z") for i in range(5)]
    assert [x.id for x in m.list()] == [x.id for x in reversed(made)]
    assert [x.id for x in m.list(limit=2)] == [made[4].id, made[3].id]
    assert [x.id for x in m.list(limit=2, offset=2)] == [made[2].id, made[1].id]
    m.forget(made[0].id)
    assert made[0].id not in {x.id for x in m.list()}
    assert {x.id for x in m.list(statuses=("active", "deleted"))} == {x.id for x in made}
    with pytest.raises(InvalidInputError):
        m.list(statuses=("bogus",))


def test_stats_keys_and_total_counts_only_active(m: Mnemo) -> None:
    empty = m.stats()
    assert empty["total"] == 0 and empty["model"] is None and empty["dim"] is None
    a = m.remember("one", type="decision", scope="project:a")
    m.remember("two")
    m.remember("three", created_at="2020-01-01T00:00:00Z")
    m.forget(a.id)
    s = m.stats()
    assert set(s) >= {"path", "total", "last_7_days", "by_type", "by_scope", "by_status", "all_records",
                      "store_bytes", "model", "dim", "vectors", "schema_version"}
    assert s["total"] == 2
    assert s["all_records"] == 3
    assert s["last_7_days"] == 1  # "two" only: "three" is old, "one" is deleted
    assert s["by_status"] == {"active": 2, "deleted": 1}
    assert s["by_type"] == {"note": 2}
    assert s["by_scope"] == {"global": 2}
    assert s["model"] == FakeEmbedder.name and s["dim"] == DIM
    assert s["store_bytes"] > 0 and s["schema_version"] >= 1
    assert s["path"] == m.path
    json.dumps(s)  # JSON-ready


# ---------------------------------------------------------------- export / import


@pytest.fixture
def filled(m: Mnemo) -> Mnemo:
    m.remember("项目使用 FastAPI + PostgreSQL", type="project_context", scope="project:demo", tags=["stack"], created_at="2024-02-01T08:00:00Z")
    m.remember("We deploy with GitHub Actions", type="decision", scope="project:demo", importance=0.8, created_at="2024-03-01T09:30:00Z")
    m.remember("I prefer concise answers", type="user_preference", confidence=0.7, metadata={"from": "chat"})
    gone = m.remember("an outdated fact", type="fact", scope="project:old")
    m.forget(gone.id)
    return m


FIELDS = ("id", "content", "created_at", "scope", "type", "tags", "importance", "confidence", "status", "metadata", "source")


def _records(store: Mnemo, statuses: tuple[str, ...] = ("active", "deleted")) -> list[tuple]:
    return sorted(tuple(json.dumps(getattr(x, f)) for f in FIELDS) for x in store.list(statuses=statuses, limit=1000))


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_export_import_round_trip(filled: Mnemo, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"export.{fmt}"
    assert filled.export(fmt, out, include_deleted=True) == 4
    with Mnemo(tmp_path / "fresh.db", embedder=FakeEmbedder()) as fresh:
        report = fresh.import_(out)
        assert report["read"] == 4 and report["imported"] == 4 and report["skipped_existing"] == 0 and report["invalid"] == []
        assert _records(fresh) == _records(filled)
        # the imported memories are searchable in their scope
        assert [h.memory.content for h in fresh.recall("deploy GitHub Actions", scope="project:demo")] == ["We deploy with GitHub Actions"]
        deleted = [x.id for x in filled.list(statuses=("deleted",))]
        assert deleted and deleted[0] not in ids(fresh.recall("outdated fact", scope="all", top_k=10))  # still deleted
        # idempotent: the same file again adds nothing
        again = fresh.import_(out)
        assert again["imported"] == 0 and again["skipped_existing"] == 4
        assert fresh.stats()["all_records"] == 4
        assert [e["kind"] for e in fresh.history(fresh.list(limit=1)[0].id)] == ["created"]


def test_export_without_deleted_and_text_formats(filled: Mnemo) -> None:
    doc = json.loads(filled.export_text("json"))
    assert doc["format"] == "mnemo-export" and doc["version"] == 1 and doc["model"] == FakeEmbedder.name
    assert len(doc["memories"]) == 3
    assert all(x["status"] == "active" for x in doc["memories"])
    lines = filled.export_text("jsonl", include_deleted=True).splitlines()
    assert len(lines) == 4 and {json.loads(x)["status"] for x in lines} == {"active", "deleted"}
    buf = io.StringIO()
    assert filled.export("jsonl", buf) == 3


def test_export_markdown(filled: Mnemo) -> None:
    md = filled.export_text("markdown")
    assert md.startswith("# mnemo export")
    assert "## project:demo" in md and "### decision" in md and "## global" in md
    for mem in filled.list():
        assert mem.content in md and mem.id in md
    assert "an outdated fact" not in md
    assert "an outdated fact" in filled.export_text("markdown", include_deleted=True)
    with pytest.raises(InvalidInputError):
        filled.export_text("yaml")


def test_import_keeps_given_fields_and_reads_naive_times_as_local(m: Mnemo, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        "\n".join(
            json.dumps(r, ensure_ascii=False)
            for r in [
                {"id": "ext-1", "content": "naive time", "created_at": "2024-05-08T13:56:00", "scope": "project:x", "type": "decision", "tags": ["t"]},
                {"id": "ext-2", "content": "utc time", "created_at": "2024-05-08T13:56:00Z"},
                {"id": "ext-3", "content": "offset time", "created_at": "2024-05-08T13:56:00+02:00"},
                {"content": "no id at all"},
            ]
        ),
        encoding="utf-8",
    )
    old_tz = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Shanghai"  # UTC+8, no daylight saving
    time.tzset()
    try:
        report = m.import_(src)
    finally:
        if old_tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
    assert report["imported"] == 4
    one = m.get("ext-1")
    assert (one.created_at, one.scope, one.type, one.tags) == ("2024-05-08T05:56:00Z", "project:x", "decision", ["t"])
    assert m.get("ext-2").created_at == "2024-05-08T13:56:00Z"
    assert m.get("ext-3").created_at == "2024-05-08T11:56:00Z"
    no_id = [x for x in m.list() if x.content == "no id at all"]
    assert len(no_id) == 1 and no_id[0].id.startswith("mem_")
    # without an id, idempotence is by text and scope
    assert m.import_(src)["imported"] == 0
    assert m.stats()["total"] == 4


def test_import_from_iterable_and_json_object(m: Mnemo, tmp_path: Path) -> None:
    assert m.import_([{"content": "from a list"}])["imported"] == 1
    p = tmp_path / "doc.json"
    p.write_text(json.dumps({"memories": [{"content": "from an object", "type": "fact"}]}), encoding="utf-8")
    assert m.import_(p)["imported"] == 1
    assert {x.content for x in m.list()} == {"from a list", "from an object"}


def test_import_skip_invalid_reports_lines(m: Mnemo, tmp_path: Path) -> None:
    p = tmp_path / "mixed.jsonl"
    p.write_text('{"content": "good one"}\nnot json\n{"content": ""}\n{"content": "good two", "importance": 3}\n{"content": "good three"}\n', encoding="utf-8")
    with pytest.raises(InvalidInputError) as info:
        m.import_(p)
    assert "line 2" in str(info.value) and "line 3" in str(info.value) and "line 4" in str(info.value)
    assert [ln for ln, _ in info.value.problems] == [2, 3, 4]  # type: ignore[attr-defined]
    assert m.stats()["all_records"] == 0
    report = m.import_(p, skip_invalid=True)
    assert report["imported"] == 2
    assert [x["line"] for x in report["invalid"]] == [2, 3, 4]
    assert {x.content for x in m.list()} == {"good one", "good three"}


# ---------------------------------------------------------------- models: switching and reindex


def test_switching_embedder_needs_reindex(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder()) as a:
        mem = a.remember("Sentry collects the frontend errors", scope="project:web")
        a.remember("Prometheus scrapes the backend metrics")
    with Mnemo(path, embedder=OtherEmbedder()) as b:
        with pytest.raises(ModelMismatchError, match="mnemo reindex"):
            b.recall("frontend errors", scope="project:web")
        with pytest.raises(ModelMismatchError, match=FakeEmbedder.name):
            b.remember("a new memory written with the other model")
        assert b.stats()["total"] == 2  # the refused write changed nothing
        report = b.reindex()
        assert report["model"] == OtherEmbedder.name and report["previous_model"] == FakeEmbedder.name
        assert report["embedded"] == 2 and report["fts_rows"] == 2 and report["dropped_vectors"] > 0
        assert ids(b.recall("frontend errors", scope="project:web"))[:1] == [mem.id]
        s = b.stats()
        assert s["model"] == OtherEmbedder.name and s["dim"] == 48
        b.remember("a new memory written with the other model")
        assert all(c["status"] == "ok" for c in b.doctor()), b.doctor()
    # and now the first model is the stranger
    with Mnemo(path, embedder=FakeEmbedder()) as a2:
        with pytest.raises(ModelMismatchError):
            a2.recall("frontend errors")
        assert a2.recall("frontend errors", scope="project:web", mode="fts")  # words still work


def test_reindex_is_idempotent_on_a_healthy_store(m: Mnemo) -> None:
    m.remember("one thing")
    m.remember("another thing")
    r = m.reindex()
    assert r["model"] == FakeEmbedder.name and r["embedded"] == 0 and r["fts_rows"] == 2 and r["dropped_vectors"] == 0
    assert [h.memory.content for h in m.recall("another thing", top_k=1)] == ["another thing"]


def test_reindex_rebuilds_lost_vectors(m: Mnemo) -> None:
    mem = m.remember("vectors can be rebuilt")
    with m.store.transaction():
        m.store.conn.execute("DELETE FROM embeddings")
    assert any(c["check"] == "vectors" and c["status"] == "fail" for c in m.doctor())
    assert m.reindex()["embedded"] == 1
    assert ids(m.recall("vectors rebuilt")) == [mem.id]
    assert all(c["status"] == "ok" for c in m.doctor())


# ---------------------------------------------------------------- doctor


def test_doctor_all_ok_and_leaves_no_trace(m: Mnemo) -> None:
    fresh = m.doctor()
    assert all(c["status"] == "ok" for c in fresh), fresh
    m.remember("doctor should not add memories")
    before = (m.stats(), m.export_text("jsonl", include_deleted=True))
    checks = m.doctor()
    assert all(set(c) == {"check", "status", "detail", "fix"} for c in checks)
    names = [c["check"] for c in checks]
    assert names == ["schema", "integrity", "model", "index model", "vectors", "write-probe", "capture model", "network", "encryption",
                     "sync folder", "conversion leftovers"]
    assert all(c["status"] == "ok" for c in checks), checks
    after = (m.stats(), m.export_text("jsonl", include_deleted=True))
    assert before[0]["all_records"] == after[0]["all_records"] == 1
    assert before[1] == after[1]
    assert not [h for h in m.recall("mnemo doctor probe", scope="all", top_k=10) if h.memory.scope == "mnemo:doctor"]
    assert m.stats()["by_scope"] == {"global": 1}
    assert all(x.scope == "global" for x in m.list(statuses=("active", "superseded", "archived", "deleted")))


def test_doctor_reports_a_wrong_model(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as a:
        a.remember("something")
    with Mnemo(tmp_path / "s.db", embedder=OtherEmbedder()) as b:
        checks = {c["check"]: c for c in b.doctor()}
        assert checks["index model"]["status"] == "fail"
        assert "mnemo reindex" in checks["index model"]["fix"]


# ---------------------------------------------------------------- opening


def test_create_false_refuses_a_missing_store(tmp_path: Path) -> None:
    from mnemo import StoreMissingError

    with pytest.raises(StoreMissingError, match="mnemo init"):
        Mnemo(tmp_path / "nope.db", embedder=FakeEmbedder(), create=False)
    assert not (tmp_path / "nope.db").exists()


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as a:
        mem = a.remember("persisted across opens", tags=["x"])
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder(), create=False) as b:
        assert b.get(mem.id).tags == ["x"]
        assert ids(b.recall("persisted across opens")) == [mem.id]


def test_a_unique_id_prefix_finds_the_memory_and_an_ambiguous_one_says_so(m: Mnemo) -> None:
    a = m.remember("the first note", id="mem_140fdde8_20261201_093000")
    m.remember("the second note", id="mem_140fdde9_20261201_093000")
    assert m.get("mem_140fdde8").id == a.id and m.history("mem_140fdde8")[0]["kind"] == "created"
    assert m.forget("mem_140fdde8").status == "deleted" and m.restore("mem_140fdde8").status == "active"
    with pytest.raises(InvalidInputError, match="several ids"):
        m.get("mem_140fdde")
    with pytest.raises(NotFoundError):
        m.get("mem_0000")  # a prefix that matches nothing
    with pytest.raises(NotFoundError):
        m.get("mem_140")  # shorter than 8 characters: never a prefix lookup
