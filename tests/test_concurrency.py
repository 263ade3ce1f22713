"""Several processes on one store: no lost write, no "database is locked", and a killed import leaves it consistent.

Workers run in spawned processes (a fresh interpreter each, like parallel hook invocations); they
live in this module so the spawned interpreter can import them. Every wait has a generous timeout
so a deadlock fails the test instead of hanging it; no wait is there to fix timing.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import traceback
from pathlib import Path
from typing import Any

import apsw
import pytest

from fake_embedder import FakeEmbedder

from mnemo import Mnemo

# SQLite file locking and WAL across processes (PostgreSQL: test_postgres.py)
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_only]

WRITERS = 4
PER_WRITER = 50
TIMEOUT = 120  # seconds: only ever reached by a deadlock or a hung child


def content_of(w: int, i: int) -> str:
    return f"w{w}i{i} writer{w} entry"


# ---------------------------------------------------------------- workers (run in child processes)


def _writer(path: str, w: int, n: int, start: Any, results: Any) -> None:
    try:
        with Mnemo(path, embedder=FakeEmbedder(), scope=f"project:w{w}") as m:
            start.wait(TIMEOUT)
            for i in range(n):
                mem = m.remember(content_of(w, i), tags=[f"writer{w}"])
                assert mem.scope == f"project:w{w}"
        results.put(("ok", w, None))
    except BaseException:
        results.put(("error", w, traceback.format_exc()))


def _reader(path: str, start: Any, writers_done: Any, results: Any) -> None:
    try:
        searches = 0
        with Mnemo(path, embedder=FakeEmbedder()) as m:
            start.wait(TIMEOUT)
            while not writers_done.is_set():
                for hit in m.recall("writer entry", scope="all", top_k=20):
                    assert hit.memory.content.endswith("entry")
                m.list(scope="all", limit=5)
                m.stats()
                searches += 1
            # the long-lived reader now sees every write of the other processes
            missing = []
            rows = m.recall_batch([{"qid": f"{w}/{i}", "query": content_of(w, i)} for w in range(WRITERS) for i in range(PER_WRITER)],
                                  top_k=1, scope="all")
            for row in rows:
                w, i = map(int, row["qid"].split("/"))
                if not row["results"] or row["results"][0]["content"] != content_of(w, i):
                    missing.append(row["qid"])
            assert not missing, f"the reader's index misses {missing[:10]}"
        results.put(("ok", "reader", searches))
    except BaseException:
        results.put(("error", "reader", traceback.format_exc()))


def _same_text_writer(path: str, w: int, texts: list[str], start: Any, results: Any) -> None:
    try:
        with Mnemo(path, embedder=FakeEmbedder()) as m:
            start.wait(TIMEOUT)
            actions = [m.remember_many([dict(content=t, tags=[f"by{w}"])])[0][1] for t in texts]
        results.put(("ok", w, actions))
    except BaseException:
        results.put(("error", w, traceback.format_exc()))


def _importer(path: str, source: str, start: Any, both_decided: Any, results: Any) -> None:
    try:
        with Mnemo(path, embedder=FakeEmbedder()) as m:
            # make the race certain instead of likely: neither session writes its first batch
            # before both have read the file and looked at what the store already holds
            original = m._insert_prepared
            first = [True]

            def insert_prepared(*args: Any, **kwargs: Any) -> Any:
                if first[0]:
                    first[0] = False
                    both_decided.wait(TIMEOUT)
                return original(*args, **kwargs)

            m._insert_prepared = insert_prepared  # type: ignore[method-assign]
            start.wait(TIMEOUT)
            report = m.import_(source)
        results.put(("ok", None, report))
    except BaseException:
        results.put(("error", None, traceback.format_exc()))


def _doomed_importer(path: str, source: str, kill_after_inserts: int, ready: Any, never: Any) -> None:
    """Import, but stop dead (waiting to be SIGKILLed) after a given number of rows were inserted."""
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        original = m.store.insert
        count = 0

        def insert(*args: Any, **kwargs: Any) -> None:
            nonlocal count
            original(*args, **kwargs)
            count += 1
            if count == kill_after_inserts:
                ready.set()
                never.wait(TIMEOUT)

        m.store.insert = insert  # type: ignore[method-assign]
        m.import_(source)
    ready.set()  # only reached if the import finished before the kill point: the test then fails


# ---------------------------------------------------------------- helpers


def _collect(results: Any, n: int) -> list[tuple[str, Any, Any]]:
    return [results.get(timeout=TIMEOUT) for _ in range(n)]


def _join(procs: list[Any]) -> None:
    for p in procs:
        p.join(TIMEOUT)
        assert p.exitcode == 0, f"{p.name} exited with {p.exitcode}"


def _integrity(path: Path) -> list[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def _init(path: Path) -> None:
    Mnemo(path, embedder=FakeEmbedder()).close()


# ---------------------------------------------------------------- tests


def test_parallel_writers_and_a_reader_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _init(path)
    ctx = mp.get_context("spawn")
    start, writers_done, results = ctx.Event(), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=_writer, args=(str(path), w, PER_WRITER, start, results), name=f"writer{w}") for w in range(WRITERS)]
    reader = ctx.Process(target=_reader, args=(str(path), start, writers_done, results), name="reader")
    for p in [*writers, reader]:
        p.start()
    start.set()
    outcomes = _collect(results, WRITERS)
    writers_done.set()
    outcomes += _collect(results, 1)
    _join([*writers, reader])
    errors = [o for o in outcomes if o[0] != "ok"]
    assert not errors, "\n".join(str(e[2]) for e in errors)
    assert {o[1] for o in outcomes} == {*range(WRITERS), "reader"}

    assert _integrity(path) == ["ok"]
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        stored = m.list(scope="all", limit=10_000)
        expected = {(content_of(w, i), f"project:w{w}") for w in range(WRITERS) for i in range(PER_WRITER)}
        assert len(stored) == WRITERS * PER_WRITER
        assert {(x.content, x.scope) for x in stored} == expected
        assert len({x.id for x in stored}) == WRITERS * PER_WRITER
        assert m.stats()["total"] == WRITERS * PER_WRITER
        assert all([e["kind"] for e in m.history(x.id)] == ["created"] for x in stored)
        assert m.store.count_missing_embeddings(FakeEmbedder.name) == 0
        seqs = [r[0] for r in m.store.conn.execute("SELECT seq FROM memories")]
        assert len(set(seqs)) == len(seqs)
        fts = m.store.conn.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0]
        assert fts == WRITERS * PER_WRITER
        # scopes stayed apart under contention
        assert {h.memory.scope for h in m.recall("writer0 entry", scope="project:w0", top_k=100)} <= {"project:w0"}
        assert all(c["status"] == "ok" for c in m.doctor())


def test_parallel_writers_of_the_same_texts_store_each_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _init(path)
    texts = [f"shared fact number {i}" for i in range(20)]
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_same_text_writer, args=(str(path), w, texts, start, results)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    start.set()
    outcomes = _collect(results, WRITERS)
    _join(procs)
    assert all(o[0] == "ok" for o in outcomes), "\n".join(str(o[2]) for o in outcomes if o[0] != "ok")
    actions = [a for o in outcomes for a in o[2]]
    assert actions.count("created") + actions.count("related") == len(texts)  # stored once each (related: also linked)
    assert actions.count("merged") == len(texts) * (WRITERS - 1)
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        stored = m.list(limit=1000)
        assert sorted(x.content for x in stored) == sorted(texts)
        for x in stored:
            assert sorted(x.tags) == [f"by{w}" for w in range(WRITERS)]
            assert [e["kind"] for e in m.history(x.id)] == ["created"] + ["merged"] * (WRITERS - 1)


def _export_file(folder: Path, n: int) -> Path:
    """An import file of ``n`` records, every other one with its own id."""
    f = folder / "import.jsonl"
    with f.open("w", encoding="utf-8") as fh:
        for i in range(n):
            rec: dict[str, Any] = {"content": f"imported record {i} about topic{i}", "scope": f"project:p{i % 3}",
                                   "created_at": f"2024-01-{1 + i % 28:02d}T10:00:00Z"}
            if i % 2 == 0:
                rec["id"] = f"imp-{i:04d}"
            fh.write(json.dumps(rec) + "\n")
    return f


def test_parallel_imports_of_the_same_file(tmp_path: Path) -> None:
    """Two sessions import the same file at once: both succeed, each record is stored once."""
    path = tmp_path / "store.db"
    _init(path)
    n = 300
    source = _export_file(tmp_path, n)
    ctx = mp.get_context("spawn")
    start, both_decided, results = ctx.Event(), ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_importer, args=(str(path), str(source), start, both_decided, results)) for _ in range(2)]
    for p in procs:
        p.start()
    start.set()
    outcomes = _collect(results, 2)
    _join(procs)
    assert all(o[0] == "ok" for o in outcomes), "\n".join(str(o[2]) for o in outcomes if o[0] != "ok")
    assert sum(o[2]["imported"] for o in outcomes) == n
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        stored = m.list(limit=10_000)
        assert len(stored) == n
        assert len({(x.content, x.scope) for x in stored}) == n


@pytest.mark.parametrize(
    "kill_after_inserts",
    [128, 128 + 40],  # IMPORT_BATCH is 128: after the last row of the first batch (before its commit), and inside the second batch
    ids=["before-first-commit", "inside-second-batch"],
)
def test_import_killed_midway_leaves_a_consistent_store(tmp_path: Path, kill_after_inserts: int) -> None:
    from mnemo._core.maintenance import IMPORT_BATCH

    assert IMPORT_BATCH == 128
    path = tmp_path / "store.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        m.remember("a memory from before the import")
    n = 300
    source = _export_file(tmp_path, n)
    ctx = mp.get_context("spawn")
    ready, never = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_doomed_importer, args=(str(path), str(source), kill_after_inserts, ready, never))
    p.start()
    try:
        assert ready.wait(TIMEOUT), "the importer never reached the kill point"
        assert p.is_alive(), "the importer finished before it could be killed"
        os.kill(p.pid, signal.SIGKILL)  # mid-import, with a write transaction open
    finally:
        p.join(TIMEOUT)
    assert p.exitcode == -signal.SIGKILL

    assert _integrity(path) == ["ok"]
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        # a batch is one transaction: the killed one left nothing behind, earlier ones are whole
        count = m.stats()["total"] - 1
        assert count == (kill_after_inserts - 1) // IMPORT_BATCH * IMPORT_BATCH
        events = m.store.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        assert events == count + 1
        assert m.store.count_missing_embeddings(FakeEmbedder.name) == 0
        assert m.store.conn.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0] == count + 1
        # the store takes writes right away (no stale lock), and re-running the import completes it
        m.remember("a memory written after the crash")
        report = m.import_(source)
        assert report["imported"] == n - count and report["skipped_existing"] == count
        assert m.stats()["total"] == n + 2
        assert len({(x.content, x.scope) for x in m.list(limit=10_000)}) == n + 2
        assert m.import_(source)["imported"] == 0
        assert all(c["status"] == "ok" for c in m.doctor())


def test_first_open_while_another_process_creates_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two hooks start on a machine without a store: one creates it between the other's first
    look at the file (empty, schema version 0) and its next step. The late one must simply use it."""
    path = tmp_path / "store.db"
    plain = apsw.Connection
    fired: list[bool] = []

    class _Rows:
        def __init__(self, rows: list[Any]) -> None:
            self._rows = iter(rows)

        def fetchone(self) -> Any:
            return next(self._rows, None)

        def __iter__(self) -> Any:
            return self._rows

    class RacingConnection(plain):  # type: ignore[misc, valid-type]
        def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
            cursor = super().execute(sql, *args, **kwargs)
            if not fired and sql.strip().lower() == "pragma user_version":
                fired.append(True)
                rows = list(cursor)
                monkeypatch.setattr(apsw, "Connection", plain)
                Mnemo(path, embedder=FakeEmbedder()).close()  # the other process creates the store now
                return _Rows(rows)
            return cursor

    monkeypatch.setattr(apsw, "Connection", RacingConnection)
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        mem = m.remember("written by the process that lost the race")
    assert fired, "the store never read its schema version: update this test's hook"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        assert m.get(mem.id).content == "written by the process that lost the race"
