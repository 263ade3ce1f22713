"""The vector channel at scale: the int8 first pass with exact rescoring (``_recall/vindex.py``)
and the full-text search's rank-then-filter (``SQLiteStore.fts_search``), each checked against
the exact answer it replaces, on synthetic vectors shaped like e5's and through the real model."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._recall import vindex
from mnemo._recall.vindex import VectorIndex
from mnemo._stores.base import Filters
from mnemo._stores.sql import SQLITE, filter_clause

DIM = 64


def e5_like(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors that share most of their direction (e5's unrelated pairs sit near 0.8),
    grouped around topics, as real sentence vectors are."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIM)
    topics = rng.standard_normal((40, DIM))
    v = 3.0 * common + topics[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def rows(vecs: np.ndarray, start: int = 1, scope: str = "global", seq: int | None = None) -> list[tuple]:
    return [(start + i, (seq or start) + i, scope, "fact", "active", 1.0e9, None, "[]", v.tobytes(), 0.5) for i, v in enumerate(vecs)]


def exact(index: VectorIndex, query: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
    held, index._int8 = index._int8, None
    try:
        return index.search(query, k, filters)
    finally:
        index._int8 = held


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    if vindex._simd is None:  # pragma: no cover
        pytest.fail("simsimd is a dependency; the first pass must run")
    monkeypatch.setattr(vindex, "QUANTISED_FROM", 1000)


def test_first_pass_finds_what_the_exact_scan_finds(small_threshold: None) -> None:
    vecs = e5_like(5000)
    index = VectorIndex("m", DIM)
    index.apply(rows(vecs))
    assert index._int8 is not None
    queries = e5_like(60, seed=1)
    for k in (10, 100):
        recall = [len({pk for pk, _ in index.search(q, k)} & {pk for pk, _ in exact(index, q, k)}) / k for q in queries]
        assert np.mean(recall) >= 0.99 and min(recall) >= 0.9, (k, np.mean(recall), min(recall))
    q = queries[0]
    got, want = index.search(q, 10), exact(index, q, 10)
    assert [pk for pk, _ in got] == [pk for pk, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)  # the scores are the exact cosines


def test_the_filters_apply_before_the_shortlist(small_threshold: None) -> None:
    vecs = e5_like(4000)
    index = VectorIndex("m", DIM)
    index.apply(rows(vecs[:3700]) + rows(vecs[3700:], start=3701, scope="project:x"))
    only_x = Filters(scopes=["project:x"], statuses=("active",))
    for q in e5_like(20, seed=2):
        got = index.search(q, 100, only_x)
        assert all(pk > 3700 for pk, _ in got) and len(got) == 100
        assert [pk for pk, _ in got[:10]] == [pk for pk, _ in exact(index, q, 10, only_x)]
    few = Filters(scopes=["project:x"], statuses=("active",), tags=["none-has-it"])
    assert index.search(vecs[0], 10, few) == []


def test_rows_written_later_are_coded(small_threshold: None) -> None:
    vecs = e5_like(3000)
    index = VectorIndex("m", DIM)
    index.apply(rows(vecs[:2000]))
    fitted = index._int8
    index.apply(rows(vecs[2000:2500], start=2001))  # grows, not yet doubled: the same fit
    assert index._int8 is fitted
    assert index.search(vecs[2400], 1)[0][0] == 2401
    index.apply([(7, 9000, "global", "fact", "active", 1.0e9, None, "[]", vecs[2999].tobytes(), 0.5)])  # an edit
    assert index.search(vecs[2999], 1)[0][0] == 7
    index.apply(rows(vecs[2500:], start=2501, seq=9001) + rows(e5_like(1500, seed=5), start=3001, seq=9600))
    assert index._int8 is not fitted  # doubled since the fit: fitted again
    assert index.search(vecs[2400], 1)[0][0] == 2401


def test_a_small_index_scans_exactly() -> None:
    index = VectorIndex("m", DIM)
    index.apply(rows(e5_like(500)))
    assert index._int8 is None  # below QUANTISED_FROM


def test_a_search_started_beside_other_work(small_threshold: None) -> None:
    vecs = e5_like(3000)
    index = VectorIndex("m", DIM)
    index.apply(rows(vecs))
    pending = index.start_search(vecs[5], 10)
    assert pending()[0][0] == 6 and pending() == index.search(vecs[5], 10)


@pytest.mark.sqlite_only
def test_full_text_ranks_then_filters_as_the_join_did(tmp_path: Path) -> None:
    """Rank-then-filter returns what ranking within the filters returns, for a wide scope (the
    over-fetch is enough) and for a narrow one (it ranks again within the filters)."""
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as m:
        recs = [{"content": f"deploy note {i}: the deploy pipeline {'deploy ' * (i % 5)}step {i}", "scope": "global"} for i in range(600)]
        recs += [{"content": f"deploy in project x, item {i}", "scope": "project:x"} for i in range(5)]
        m.remember_many(recs, dedup=False)
        store = m.store
        for scopes, limit in ((["global", "project:x"], 50), (["project:x"], 50), (["global"], 10)):
            f = Filters(scopes=scopes, statuses=("active",))
            where, args = filter_clause(f, SQLITE)
            want = [(int(pk), s) for pk, s in store.conn.execute(
                "SELECT f.rowid, -bm25(memory_fts) FROM memory_fts f JOIN memories m ON m.pk = f.rowid "
                f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts) LIMIT ?", ['"deploy"', *args, limit])]
            got = store.fts_search('"deploy"', f, limit)
            assert [pk for pk, _ in got] == [pk for pk, _ in want], scopes
        assert store.fts_search('"nothing-matches-this"', f, 10) == []


@pytest.mark.model
def test_recall_through_the_real_model_is_unchanged_by_the_first_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same questions over the same e5 store, the first pass on and off: the same hits in
    the same order (the first pass only chooses which rows are scored exactly)."""
    topics = ["the database", "the deploy", "my editor", "the release", "our API", "the tests", "backups", "on-call"]
    verbs = ["runs on", "moved to", "is configured with", "was decided for", "depends on", "breaks without"]
    things = ["PostgreSQL 16", "Kubernetes", "Neovim", "a Friday freeze", "GraphQL", "pytest-xdist", "S3 at 03:00 UTC",
              "PagerDuty", "Redis", "GitHub Actions", "Tailwind", "FastAPI"]
    texts = [f"{t.capitalize()} {v} {x}." for t in topics for v in verbs for x in things][:400]
    texts += ["数据库每天凌晨三点备份到 S3", "我习惯用 Neovim 写代码", "项目使用 FastAPI + PostgreSQL"]
    with Mnemo(tmp_path / "e5.db", model="e5") as m:
        m.remember_many([{"content": t} for t in texts], dedup=False)
        questions = ["what database do we run on", "数据库什么时候备份", "which editor do I use", "how is the deploy configured",
                     "what does the release depend on", "技术栈是什么"]

        def answers() -> list[list[str]]:
            return [[h.memory.id for h in m.recall(q, top_k=10, touch=False)] for q in questions]

        exact_answers = answers()
        monkeypatch.setattr(vindex, "QUANTISED_FROM", 100)
        m._index = None  # built again, now with the first pass
        quantised = answers()
        assert m._index is not None and m._index._int8 is not None
        assert quantised == exact_answers


def test_searching_leaves_the_interpreter_sound(small_threshold: None) -> None:
    """SimSIMD 6.5's ``cdist(out=...)`` returns ``None`` without holding a reference to it; used
    so, a long-running service aborts once ``None``'s count runs out. Searching must not drain it."""
    index = VectorIndex("m", DIM)
    index.apply(rows(e5_like(2000)))
    before = sys.getrefcount(None)
    for q in e5_like(300, seed=3):
        index.search(q, 10)
    assert sys.getrefcount(None) >= before - 50


@pytest.mark.sqlite_only
def test_the_most_important_of_a_kind_come_from_the_index_as_the_store_sorts_them(tmp_path: Path) -> None:
    """A question about a kind of thing adds that kind's most important memories as candidates;
    the index answers it in memory, in the order the store's ``ORDER BY importance DESC, pk DESC``
    gives (ties included)."""
    from dataclasses import replace

    rng = np.random.default_rng(4)
    kinds = ("fact", "decision", "user_preference", "project_context")
    with Mnemo(tmp_path / "s.db", embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": f"memory number {i} about topic {i % 37}", "type": kinds[i % 4],
                          "importance": round(float(rng.choice([0.3, 0.5, 0.5, 0.7, rng.uniform(0, 1)])), 3),
                          "scope": "global" if i % 3 else "project:x"} for i in range(400)], dedup=False)
        idx = m._fresh_index()
        base = m._filters(scope="project:x", types=None, tags=None, since=None, until=None)
        for types in (["decision"], ["fact", "project_context"], ["goal"]):
            f = replace(base, types=types)
            want = [m.store.pk_of(x.id) for x in m.store.list(f, order="importance DESC", limit=20)]
            assert idx.most_important(f, 20) == want, types


def test_the_mask_keeps_the_rows_of_every_named_scope_type_and_status() -> None:
    """The mask compares a column with each named code (np.isin sorted the column: 0.5 ms a
    recall at 100k); the rows it keeps are the ones np.isin keeps, for one, a few and many codes."""
    rng = np.random.default_rng(3)
    n = 3000
    scopes = [f"project:{i}" for i in range(12)] + ["global"]
    kinds = ["fact", "decision", "note"]
    statuses = ["active", "superseded", "archived"]
    picks = [(scopes[rng.integers(len(scopes))], kinds[rng.integers(3)], statuses[rng.integers(3)]) for _ in range(n)]
    vecs = e5_like(n, seed=4)
    index = VectorIndex("m", DIM)
    index.apply([(i + 1, i + 1, s, t, st, 1.0e9, None, "[]", v.tobytes(), 0.5) for i, ((s, t, st), v) in enumerate(zip(picks, vecs))])
    for wanted in (["global"], ["project:3", "global"], scopes[:5], scopes[:11], scopes, ["project:none"]):
        for types, stats in ((None, ("active",)), (["fact", "note"], ("active", "archived"))):
            got = index.mask(Filters(scopes=wanted, types=types, statuses=stats))
            want = np.array([s in wanted and (types is None or t in types) and st in stats for s, t, st in picks])
            assert (got == want).all(), (wanted, types, stats)
