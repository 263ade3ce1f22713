"""Migrations only grow: an old store file is upgraded in place, with a backup first."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from fake_embedder import FakeEmbedder
from old_stores import v1_store

from mnemo import Mnemo
from mnemo._stores.sqlite_schema import LATEST_VERSION, MIGRATIONS

# upgrades SQLite store files (PostgreSQL migrations: test_postgres.py)
pytestmark = pytest.mark.sqlite_only


def _v1_store(path: Path) -> None:
    """A schema-v1 store with one memory from 2019, imported on 2026-01-02, and its 'created' event."""
    v1_store(path, "an old note from 2019", memory_id="mem_old", created_at="2019-05-01T00:00:00Z",
             updated_at="2026-01-02T00:00:00Z", event=True)


def test_v1_store_upgrades_with_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _v1_store(path)
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        assert m.store.schema_version == LATEST_VERSION >= 2
        old = m.get("mem_old")
        # entered the store when it was imported, not at the note's own date
        assert old.stored_at == "2026-01-02T00:00:00Z" and old.created_at == "2019-05-01T00:00:00Z"
        assert old.pinned is False
        m.reindex()  # its vector was never computed under v1 here; the index rebuilds
        assert [h.memory.id for h in m.recall("old note", min_score=0.0)] == ["mem_old"]
    backups = list(tmp_path.glob("old.db.backup-v1-*"))
    assert len(backups) == 1
    conn = apsw.Connection(str(backups[0]))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1  # the backup is the file as it was
    conn.close()


def test_every_migration_is_recorded(tmp_path: Path) -> None:
    with Mnemo(tmp_path / "new.db", embedder=FakeEmbedder()) as m:
        rows = list(m.store.conn.execute("SELECT version FROM schema_migrations ORDER BY version"))
    assert [r[0] for r in rows] == [n for n, _, _ in MIGRATIONS]
