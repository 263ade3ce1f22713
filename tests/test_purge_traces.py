"""Purge purges: the text and id of a purged memory leave every table that copied them, and the
file itself; a reader holding the store open is waited for, and when it never lets go the
purge says so instead of reporting success (issue "Hardening": purge leaves copies)."""

from __future__ import annotations

import functools
import json
import threading
import time
from pathlib import Path

import pytest
from conftest import BACKEND
from fake_embedder import FakeEmbedder

from mnemo import Mnemo

SECRET = "PURGE-MARKER-9c41 the vault combination is 5432"


def _all_rows(m: Mnemo) -> str:
    """Every row of every table mnemo reads back (memories, history, log, sources), as text."""
    parts = [json.dumps(mem.to_dict(), ensure_ascii=False) for mem in m.store.iter_all()]
    parts += [json.dumps(m.history(mem.id), ensure_ascii=False) for mem in m.store.iter_all()]
    parts += [json.dumps(row, ensure_ascii=False) for row in m.log(limit=1000)]
    parts += [json.dumps(src, ensure_ascii=False) for src in m.sources()]
    return "\n".join(parts)


@pytest.fixture
def m(store_target: str) -> Mnemo:
    with Mnemo(store_target, embedder=FakeEmbedder()) as store:
        yield store


def test_the_injection_log_forgets_the_id_and_the_prompt_that_held_the_text(m: Mnemo) -> None:
    gone = m.remember(SECRET)
    kept = m.remember("the deploy runs on Fridays")
    m.context(f"what did I say? {SECRET}", session="s1", budget_tokens=500)
    m.context("the deploy runs on Fridays vault", session="s1", budget_tokens=500)
    assert gone.id in _all_rows(m)
    m.purge([gone.id])
    rows = _all_rows(m)
    assert "PURGE-MARKER" not in rows and "5432" not in rows
    assert gone.id not in json.dumps(m.log(limit=1000))
    assert kept.id in json.dumps(m.log(limit=1000))  # the rest of the log stays


def test_a_neighbours_history_loses_what_the_purged_memory_said(m: Mnemo) -> None:
    old = m.remember("the database port is 5432", dedup=False)
    new = m.remember("the database port is now 6543", dedup=False)
    with m.store.transaction():  # what a supersede writes on the old memory
        m.store.add_event(old.id, "superseded", "remember", {"by": new.id, "change": "5432 → 6543"})
        m.store.add_event(old.id, "merged", "remember", {"merged": {"content": new.content}})
    m.purge([new.id])
    history = json.dumps(m.history(old.id), ensure_ascii=False)
    assert "6543" not in history and new.id in history  # the event stays, saying a purged memory was involved
    assert [e["kind"] for e in m.history(old.id)][-2:] == ["superseded", "merged"]


def test_a_summary_that_quoted_the_memory_goes_too_and_its_other_sources_come_back(m: Mnemo) -> None:
    a = m.remember(SECRET, dedup=False)
    b = m.remember("we ship on Fridays", dedup=False)
    summary = m.remember(f"Summary: {SECRET}; we ship on Fridays", dedup=False)
    with m.store.transaction():
        for src in (a, b):
            m.store.add_relation(summary.id, src.id, "derived_from", 1.0)
            m.store.set_status(src.id, "archived")
    report = m.purge([a.id])
    assert report["summaries_purged"] == [summary.id]
    assert m.store.get(summary.id) is None and m.get(b.id).status == "active"
    assert "PURGE-MARKER" not in _all_rows(m)


def test_the_source_row_goes_with_the_last_chunk_of_a_document(m: Mnemo, tmp_path: Path) -> None:
    note = tmp_path / "vault-notes.md"
    note.write_text(f"# Vault\n\n{SECRET}\n", "utf-8")
    m.ingest([note])
    (chunk,) = m.store.memories_by_source(f"file:{note}")
    m.purge([chunk.id])
    assert m.sources() == [] and "Vault" not in _all_rows(m)


@pytest.mark.sqlite_only
def test_purge_removes_the_migration_backups_and_waits_for_a_reader(tmp_path: Path) -> None:
    import apsw

    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        gone = m.remember(SECRET)
        m.remember("an ordinary note")
        backup = path.with_name("s.db.backup-v3-20260101000000")
        backup.write_bytes(b"a migration backup holding " + SECRET.encode())
        reader = apsw.Connection(str(path))
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 2  # a snapshot held open
        threading.Timer(1.0, lambda: (reader.execute("COMMIT"), reader.close())).start()
        report = m.purge([gone.id])
        assert report["complete"] and str(backup) in report["removed_files"]
    leaked = [f.name for f in tmp_path.iterdir() if b"PURGE-MARKER" in f.read_bytes()]
    assert leaked == []


@pytest.mark.sqlite_only
def test_a_reader_that_never_lets_go_is_reported_not_hidden(tmp_path: Path) -> None:
    import apsw

    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        gone = m.remember(SECRET)
        reader = apsw.Connection(str(path))
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memories").fetchone()
        m.store.scrub = functools.partial(type(m.store).scrub, m.store, wait=0.3)  # type: ignore[method-assign]
        started = time.monotonic()
        report = m.purge([gone.id])
        assert not report["complete"] and "another process" in report["warning"] and time.monotonic() - started < 5
        assert m.store.get(gone.id) is None  # the rows are gone all the same
        reader.execute("COMMIT")
        reader.close()


@pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's VACUUM result")
def test_postgres_purge_reports_its_vacuum(m: Mnemo) -> None:
    gone = m.remember(SECRET)
    report = m.purge([gone.id])
    assert report["complete"] is True and "PURGE-MARKER" not in _all_rows(m)
