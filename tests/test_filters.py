"""Selective filters are applied inside retrieval, not after a shortlist.

The vector channel takes the top few hundred candidates; a filter applied after that shortlist
loses every match that is not among them. The tests put the few matching memories far behind
hundreds (or tens of thousands) of closer ones that the filter excludes.
"""

from __future__ import annotations

import random

import pytest
from conftest import BACKEND
from fake_embedder import FakeEmbedder

from mnemo import Mnemo

QUERY = "deploy pipeline release checklist staging rollout"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def _near(i: int, rng: random.Random) -> str:
    """A text closer to QUERY than any tagged one: the query's words plus a little noise."""
    return f"{QUERY} note {i} " + " ".join(rng.sample(WORDS, 2))


def test_one_tagged_memory_among_400_closer_untagged_neighbours_is_found(store_target: str) -> None:
    rng = random.Random(7)
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _near(i, rng)} for i in range(400)])
        far = m.remember("the release checklist lives in the wiki", tags=["ops-runbook"], dedup=False)
        assert m.recall(QUERY, top_k=10, mode="vector")[0].memory.id != far.id  # far behind the untagged ones
        for mode in ("vector", "hybrid"):
            hits = m.recall(QUERY, top_k=5, mode=mode, tags=["ops-runbook"], min_score=0)
            assert [h.memory.id for h in hits] == [far.id], mode


def test_type_and_time_filters_are_applied_inside_the_scan_too(store_target: str) -> None:
    rng = random.Random(8)
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _near(i, rng), "created_at": "2026-06-01T10:00:00Z"} for i in range(300)])
        old = m.remember("release checklist from the old days", type="decision", created_at="2024-01-05T10:00:00Z", dedup=False)
        hits = m.recall(QUERY, top_k=3, mode="vector", types=["decision"], min_score=0)
        assert [h.memory.id for h in hits] == [old.id]
        hits = m.recall(QUERY, top_k=3, mode="vector", until="2025-01-01", min_score=0)
        assert [h.memory.id for h in hits] == [old.id]


def test_an_expired_memory_stays_out_of_the_vector_channel(store_target: str) -> None:
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        gone = m.remember(QUERY + " for last quarter", expires="2020-01-01", dedup=False)
        kept = m.remember(QUERY + " for this quarter", dedup=False)
        ids = [h.memory.id for h in m.recall(QUERY, top_k=5, mode="vector", min_score=0)]
        assert kept.id in ids and gone.id not in ids
        ids = [h.memory.id for h in m.recall(QUERY, top_k=5, mode="vector", min_score=0, include_expired=True)]
        assert gone.id in ids


@pytest.mark.skipif(BACKEND != "postgres", reason="pgvector's HNSW index under a selective filter (PostgreSQL run)")
def test_a_filter_matching_15_of_40k_rows_returns_10_of_10_on_postgresql(store_target: str) -> None:
    import psycopg

    rng = random.Random(9)
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_([{"content": _near(i, rng)} for i in range(200)])
        m.import_([{"content": f"rare item {i}: " + " ".join(rng.sample(WORDS, 4)), "tags": ["rare"]} for i in range(15)])
        # 39,785 more untagged rows near the query, cloned in SQL from the first 200 (embedding 40k
        # texts through the core takes minutes); each vector nudged, so the HNSW graph is a real one
        with psycopg.connect(store_target, autocommit=True) as conn:
            conn.execute("DROP INDEX memories_vec_hnsw")  # built once after the insert: much faster than row by row
            conn.execute(
                "INSERT INTO memories (id, content, type, scope, tags, created_at, updated_at, content_hash, embed_hash, vec) "
                "SELECT m.id || '_' || g, m.content || ' copy ' || g, m.type, m.scope, m.tags, m.created_at, m.updated_at, "
                "md5(m.content || g), m.embed_hash, (SELECT array_agg(x + (random()::real - 0.5) * 0.02 ORDER BY n) "
                "FROM unnest(m.vec::real[]) WITH ORDINALITY AS u(x, n))::vector "
                "FROM memories m CROSS JOIN generate_series(1, 199) g WHERE m.tags = '[]' LIMIT 39785")
            conn.execute("CREATE INDEX memories_vec_hnsw ON memories USING hnsw (vec vector_cosine_ops)")
            conn.execute("ANALYZE memories")  # the statistics a live store has, so the planner chooses as it would there
            assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 40_000
        hits = m.recall(QUERY, top_k=10, mode="vector", tags=["rare"], min_score=0)
        assert len(hits) == 10 and all("rare" in h.memory.tags for h in hits)
        # a store of millions: the iterative HNSW scan gives up after max_scan_tuples before it
        # reaches the few matching rows, and the exact scan of those rows takes over
        for setting in ("hnsw.max_scan_tuples = 500", "enable_sort = off"):  # and a planner that picks the HNSW scan
            m.store.conn.execute(f"SET {setting}")  # type: ignore[attr-defined]
        hits = m.recall(QUERY, top_k=10, mode="vector", tags=["rare"], min_score=0)
        assert len(hits) == 10 and all("rare" in h.memory.tags for h in hits)
