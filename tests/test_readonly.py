"""Read-only stores: a store on a read-only mount, in a read-only folder, or opened read-only
on purpose answers every read (search, show, list, recent, context, stats, doctor, export, the
hooks' recall), refuses every write with one clear error, never migrates, and skips its caches
(the anchors' vectors, access counts) instead of failing over them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import apsw
import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._stores.sqlite import SQLiteStore
from mnemo._stores.sqlite_schema import LATEST_VERSION, MIGRATIONS
from mnemo.errors import StoreError

pytestmark = pytest.mark.sqlite_only

#: root writes through file modes, so the permission-based variant needs another user
ROOT = os.geteuid() == 0

PROMPT = {"session_id": "s-ro", "hook_event_name": "UserPromptSubmit", "prompt": "Which database do we use for the main service?"}


def _stock(db: Path) -> None:
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        m.remember("We use PostgreSQL 16 for the main database", type="decision")
        m.remember("The deploy runs on Fridays", tags=["ops"])


def _leave_wal(db: Path) -> None:
    """Save one more memory from a process that exits without closing the store: its -wal and
    -shm stay beside the file, holding that memory (it is in no other place)."""
    code = ("import os, sys; sys.path.insert(0, sys.argv[2]); from fake_embedder import FakeEmbedder; from mnemo import Mnemo; "
            "m = Mnemo(sys.argv[1], embedder=FakeEmbedder()); m.remember('The cache is Redis 7 on the app host'); os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(db), str(Path(__file__).parent)], check=True, timeout=60)
    assert Path(f"{db}-wal").stat().st_size > 0 and Path(f"{db}-shm").exists()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def stocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "ro" / "memory.db"
    _stock(db)
    monkeypatch.setenv("MNEMO_DB", str(db))
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "0")  # hooks answer in-process, start no service
    return db


@pytest.fixture
def locked_down(stocked: Path) -> Iterator[Path]:
    """The store's files 0444 and its folder 0555 (restored afterwards, so pytest can clean up)."""
    folder = stocked.parent
    for p in folder.iterdir():
        p.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield stocked
    finally:
        folder.chmod(0o755)
        for p in folder.iterdir():
            p.chmod(0o644)


def _reads_work(cli: Any, tmp_path: Path, *, in_wal: bool) -> None:
    """Every read command answers (and from the write-ahead log too, when it holds a memory)."""
    r = cli("search", "PostgreSQL database", "--json")
    assert r.code == 0, r.err
    assert "PostgreSQL 16" in r.json()["results"][0]["content"]
    if in_wal:
        r = cli("search", "Redis cache", "--json")
        assert r.code == 0 and "Redis 7" in r.json()["results"][0]["content"], r.err
    r = cli("list", "--json")
    assert r.code == 0 and len(r.json()) == 2 + in_wal, r.err
    r = cli("stats", "--json")
    assert r.code == 0 and r.json()["total"] == 2 + in_wal, r.err
    some_id = cli("recent", "--json").json()[0]["id"]
    for args in (("show", some_id), ("recent",), ("context", "which database"), ("export", "--format", "jsonl")):
        r = cli(*args, "--json")
        assert r.code == 0, (args, r.err)
    r = cli("doctor", "--json")
    checks = {c["check"]: c for c in r.json()["checks"]}
    assert checks["integrity"]["status"] == "ok" and checks["schema"]["status"] == "ok"
    assert checks["write-probe"]["status"] == "warn" and "read-only" in checks["write-probe"]["detail"]
    r = cli("hook", "user-prompt", stdin=json.dumps({**PROMPT, "cwd": str(tmp_path)}))
    assert r.code == 0 and "PostgreSQL 16" in r.out, r.err


def _writes_fail(cli: Any, db: Path) -> None:
    some_id = cli("recent", "--json").json()[0]["id"]
    for args in (("save", "A new decision: we use Valkey now"), ("forget", some_id), ("pause",), ("encrypt",)):
        r = cli(*args)
        assert r.code == 4, (args, r.code, r.err)
        assert f"the store at {db} is read-only" in r.err and "Traceback" not in r.err, r.err


# ---------------------------------------------------------------- read-only on purpose (no permissions needed)


def test_the_read_only_setting_reads_everything_and_writes_nothing(cli: Any, stocked: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_READ_ONLY", "1")
    before = _digest(stocked)
    _reads_work(cli, tmp_path, in_wal=False)
    _writes_fail(cli, stocked)
    assert _digest(stocked) == before  # not a byte changed: no access counts, no injection log, no anchors


def test_the_read_only_setting_reads_a_store_with_its_write_ahead_log(cli: Any, stocked: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _leave_wal(stocked)
    monkeypatch.setenv("MNEMO_READ_ONLY", "1")
    _reads_work(cli, tmp_path, in_wal=True)
    _writes_fail(cli, stocked)


def test_the_api_opens_read_only_and_says_so_on_a_write(stocked: Path) -> None:
    with Mnemo(stocked, embedder=FakeEmbedder(), read_only=True) as m:
        assert [h.memory.content for h in m.recall("PostgreSQL database")][:1] == ["We use PostgreSQL 16 for the main database"]
        assert m.stats()["total"] == 2
        with pytest.raises(StoreError, match="is read-only"):
            m.remember("We moved to MySQL")
        with pytest.raises(StoreError, match="is read-only"):
            m.forget(m.recent(limit=1)[0].id)
    with pytest.raises(StoreError, match="no mnemo store"):
        Mnemo(stocked.parent / "missing.db", embedder=FakeEmbedder(), read_only=True)
    assert not (stocked.parent / "missing.db").exists()


def test_a_read_only_store_is_never_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for number, _, sql in MIGRATIONS[:-1]:
        conn.execute(sql)
        conn.execute(f"PRAGMA user_version={number}")
    conn.close()
    before = _digest(db)
    with pytest.raises(StoreError, match=rf"read-only .*schema \(version {LATEST_VERSION - 1}\) is older than this mnemo needs"):
        SQLiteStore(db, read_only=True)
    assert _digest(db) == before and not list(tmp_path.glob("old.db.backup-*"))
    SQLiteStore(db).close()  # writable: migrated as usual
    assert SQLiteStore(db, read_only=True).schema_version == LATEST_VERSION


def test_the_warm_service_serves_a_read_only_store(stocked: Path, tmp_path: Path) -> None:
    from mnemo._hooks.client import request

    mnemo = [sys.executable, "-m", "mnemo"]
    env = {**os.environ, "MNEMO_READ_ONLY": "1"}
    before = _digest(stocked)
    proc = subprocess.Popen([*mnemo, "serve", "--idle", "30", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            if request(str(stocked), {"op": "ping"}) is not None or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert request(str(stocked), {"op": "ping"}) is not None, proc.stderr.read() if proc.poll() is not None else "no answer"
        for session in ("one", "two"):
            r = subprocess.run([*mnemo, "hook", "user-prompt"], input=json.dumps({**PROMPT, "session_id": session, "cwd": str(tmp_path)}),
                               capture_output=True, text=True, timeout=60, env=env)
            assert r.returncode == 0 and "PostgreSQL 16" in r.stdout, r.stderr
        assert request(str(stocked), {"op": "ping"})["served"] >= 3  # the hooks were the service's
        request(str(stocked), {"op": "stop"})
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _digest(stocked) == before


# ---------------------------------------------------------------- read-only by permissions (a read-only mount or folder)


needs_user = pytest.mark.skipif(ROOT, reason="root writes through file modes; the MNEMO_READ_ONLY tests cover this path")


@needs_user
def test_a_read_only_file_and_folder_without_log_files(cli: Any, locked_down: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    before = _digest(locked_down)
    _reads_work(cli, tmp_path, in_wal=False)  # no -shm can be made: opened immutable
    _writes_fail(cli, locked_down)
    monkeypatch.setenv("MNEMO_KEY", "correct horse battery staple")
    r = cli("encrypt")  # refused before any copy is made beside the store
    assert r.code == 4 and "is read-only" in r.err and "Traceback" not in r.err, r.err
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "600")  # a hook would start a service: not here, it could not lock
    r = cli("hook", "user-prompt", stdin=json.dumps({**PROMPT, "cwd": str(tmp_path)}))
    assert r.code == 0 and "PostgreSQL 16" in r.out, r.err
    assert _digest(locked_down) == before and sorted(p.name for p in locked_down.parent.iterdir()) == ["memory.db"]


@needs_user
def test_a_read_only_file_and_folder_with_its_log_files(cli: Any, stocked: Path, tmp_path: Path) -> None:
    _leave_wal(stocked)
    folder = stocked.parent
    for p in folder.iterdir():
        p.chmod(0o444)
    folder.chmod(0o555)
    try:
        _reads_work(cli, tmp_path, in_wal=True)
        _writes_fail(cli, stocked)
    finally:
        folder.chmod(0o755)
        for p in folder.iterdir():
            p.chmod(0o644)


# ---------------------------------------------------------------- caches never fail a read


def test_a_full_disk_skips_the_anchor_cache_and_refuses_writes_clearly(tmp_path: Path) -> None:
    db = tmp_path / "full.db"
    _stock(db)
    embedder = FakeEmbedder()  # a new object: its anchors are not in this process's cache yet
    with Mnemo(db, embedder=embedder) as m:
        store = m.store
        assert isinstance(store, SQLiteStore)
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full: the file cannot grow
        hits = m.recall("PostgreSQL database")  # embeds the anchors and cannot cache them: still answers
        assert hits and "PostgreSQL 16" in hits[0].memory.content
        with pytest.raises(StoreError, match="full"):
            m.remember_many([{"content": f"note {i}: " + f"word{i} filler " * 1500} for i in range(20)])
        assert m.recall("deploy Fridays")
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        assert m.store.integrity_problems() == []
