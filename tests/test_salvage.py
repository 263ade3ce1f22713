"""`mnemo doctor --salvage`: what SQLite can still read of a damaged store goes into a new one.

Damage is made on copies of a real store: cut at several offsets, bytes flipped in the middle of
the file and inside one page of the memories table, a file that is not SQLite at all, and an
encrypted store. Whatever is saved is exactly what was stored (never a damaged copy of it), the
new store passes doctor, and the damaged file is never changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo
from mnemo._stores.sqlite_file import is_encrypted
from mnemo.errors import CorruptStoreError, InvalidInputError, StoreError, StoreKeyError

pytestmark = pytest.mark.sqlite_only  # damage to an SQLite file

N = 300
KEY = "correct horse battery staple"


def make_store(path: Path, key: str | None = None) -> dict[str, Any]:
    """A store of N small memories (no overflow pages) with links and some history, checkpointed
    and closed; returns its snapshot."""
    with Mnemo(path, embedder=FakeEmbedder(), key=key) as m:
        m.remember_many([{"content": f"memory {i}: topic {i % 13} and detail {i * 7}", "scope": "global" if i % 3 else "project:p",
                          "tags": [f"t{i % 5}"], "created_at": f"2024-01-{1 + i % 28:02d}T10:00:00Z"} for i in range(N)],
                        cause="save", dedup=False)
        ids = [mem.id for mem in m.store.iter_all()]
        with m.store.transaction():
            for a, b in zip(ids[::10], ids[5::10]):
                m.store.add_relation(a, b, "related", 0.8)
        m.forget(ids[7])
        m.edit(ids[8], content="memory 8, edited")
        m.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return snapshot(m)


def snapshot(m: Mnemo) -> dict[str, Any]:
    """id → (every field, history, links) of every memory."""
    return {mem.id: (mem.to_dict(), m.store.events(mem.id), sorted((r["id"], r["kind"], r["direction"], r["strength"])
                                                                     for r in m.store.relations(mem.id)))
            for mem in m.store.iter_all()}


def leaves(path: Path, key: str | None = None) -> list[tuple[int, list[int]]]:
    """The memories table's leaf pages in rowid order: ``(page number, its rowids)``."""
    conn = apsw.Connection(str(path))
    if key:
        conn.execute(f"PRAGMA key = '{key}'")
    try:
        pages = conn.execute("SELECT pageno, ncell FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' ORDER BY path").fetchall()
        assert not conn.execute("SELECT 1 FROM dbstat WHERE name = 'memories' AND pagetype = 'overflow'").fetchall()
        rowids = [r[0] for r in conn.execute("SELECT pk FROM memories ORDER BY pk")]
        ids = dict(conn.execute("SELECT pk, id FROM memories"))
    finally:
        conn.close()
    out, at = [], 0
    for page, ncell in pages:
        out.append((page, [ids[r] for r in rowids[at:at + ncell]]))
        at += ncell
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def salvaged(bad: Path, out: Path, key: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Salvage ``bad`` into ``out`` (checking that ``bad`` is untouched) and return the report and
    the new store's snapshot, after checking that it passes doctor."""
    before = digest(bad)
    report = Mnemo.salvage(bad, out, key=key, embedder=FakeEmbedder())
    assert digest(bad) == before and not Path(f"{bad}-wal").exists() and not Path(f"{bad}-shm").exists()
    with Mnemo(out, embedder=FakeEmbedder(), key=key) as m:
        failed = [c for c in m.doctor() if c["status"] == "fail"]
        assert failed == [], failed
        assert m.store.count_missing_embeddings(FakeEmbedder.name) == 0  # vectors rebuilt
        return report, snapshot(m)


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "store.db"
    return path, make_store(path)


def damaged_copy(src: Path, name: str) -> Path:
    bad = src.with_name(name)
    shutil.copyfile(src, bad)
    return bad


def flip(path: Path, offset: int, length: int = 64) -> None:
    data = bytearray(path.read_bytes())
    for i in range(offset, min(offset + length, len(data))):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))


def test_intact_store_is_salvaged_exactly(store: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, original = store
    report, saved = salvaged(damaged_copy(path, "copy.db"), tmp_path / "out.db")
    assert report["memories_saved"] == report["memories_known"] == N and report["lost_ids"] == [] == report["damaged_ids"]
    assert report["skipped_ranges"] == {} and report["relations"] == N // 10
    assert saved == original  # every field, the whole history, every link


@pytest.mark.parametrize("cut", [0.05, 0.35, 0.6, 0.8, 0.95, 0.999])
def test_truncated_store_keeps_the_memories_on_pages_before_the_cut(store: tuple[Path, dict[str, Any]], tmp_path: Path, cut: float) -> None:
    path, original = store
    size = path.stat().st_size
    pages_kept = int(size * cut) // 4096  # whole pages before the cut
    intact = {mid for page, ids in leaves(path) if page <= pages_kept for mid in ids}
    bad = damaged_copy(path, "cut.db")
    os.truncate(bad, int(size * cut))
    try:
        report, saved = salvaged(bad, tmp_path / "out.db")
    except StoreError as exc:  # the schema itself (page 1, or a root page) was cut off: nothing to read
        assert not intact and "nothing can be salvaged" in str(exc)
        assert not (tmp_path / "out.db").exists()
        return
    assert intact <= set(saved), f"{len(intact - set(saved))} memories on intact pages were not saved"
    for mid, (fields, _, _) in saved.items():
        assert fields == original[mid][0]  # what is saved is what was stored, never a damaged copy
    assert report["memories_saved"] == len(saved)


def test_flipped_bytes_in_the_middle_of_the_file(store: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, original = store
    bad = damaged_copy(path, "flipped.db")
    size = bad.stat().st_size
    for frac in (0.4, 0.5, 0.6):
        flip(bad, int(size * frac), 4096)
    report, saved = salvaged(bad, tmp_path / "out.db")
    assert len(saved) >= N * 0.8
    for mid, (fields, _, _) in saved.items():
        assert fields == original[mid][0]


@pytest.mark.parametrize("which", [0, 1, -1])
def test_a_damaged_page_of_memories_loses_only_its_own_rows(store: tuple[Path, dict[str, Any]], tmp_path: Path, which: int) -> None:
    path, original = store
    page, lost = leaves(path)[which]
    bad = damaged_copy(path, "page.db")
    flip(bad, (page - 1) * 4096, 16)  # the page header: SQLite notices
    report, saved = salvaged(bad, tmp_path / "out.db")
    assert set(saved) == set(original) - set(lost)
    assert sorted(report["lost_ids"]) == sorted(lost) and report["memories_known"] == N
    assert report["memories_saved"] == N - len(lost) and report["skipped_ranges"]["memories"]
    for mid in saved:
        assert saved[mid][0] == original[mid][0] and saved[mid][1] == original[mid][1]


@pytest.mark.parametrize("where", ["first page", "header", "memories root"])
def test_rows_sqlite_cannot_reach_are_read_from_their_pages(store: tuple[Path, dict[str, Any]], tmp_path: Path, where: str) -> None:
    path, original = store
    conn = apsw.Connection(str(path))
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    conn.close()
    bad = damaged_copy(path, "bad.db")
    if where == "first page":  # the header and the schema: SQLite cannot open it at all
        flip(bad, 0, 4096)
    elif where == "header":
        flip(bad, 0, 16)
    else:  # the interior page above every leaf of the memories table
        flip(bad, (root - 1) * 4096, 16)
    report, saved = salvaged(bad, tmp_path / "out.db")
    assert report["memories_saved"] == report["memories_from_pages"] == N
    assert saved == original  # fields, history and links: the leaves were intact


def test_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(20000))
    with pytest.raises(StoreKeyError, match="encrypted, or not an SQLite database"):
        Mnemo.salvage(junk, tmp_path / "out.db", embedder=FakeEmbedder())
    tiny = tmp_path / "tiny.db"
    tiny.write_text("hello")
    with pytest.raises(StoreError, match="not an SQLite database"):
        Mnemo.salvage(tiny, tmp_path / "out.db", embedder=FakeEmbedder())
    text = tmp_path / "text.db"
    text.write_bytes(b"SQLite format 3\x00" + b"but not really a database, only text " * 100)
    with pytest.raises(StoreError, match="nothing can be salvaged"):
        Mnemo.salvage(text, tmp_path / "out.db", embedder=FakeEmbedder())
    assert not (tmp_path / "out.db").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".mnemo-salvage")] == []  # the private copy is gone


def test_salvage_never_overwrites(store: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, _ = store
    (tmp_path / "taken.db").write_text("mine")
    with pytest.raises(InvalidInputError, match="already exists"):
        Mnemo.salvage(path, tmp_path / "taken.db", embedder=FakeEmbedder())
    assert (tmp_path / "taken.db").read_text() == "mine"


def test_encrypted_store_needs_its_key(tmp_path: Path) -> None:
    path = tmp_path / "secret.db"
    original = make_store(path, key=KEY)
    with pytest.raises(StoreKeyError, match="only be salvaged with its key"):
        Mnemo.salvage(path, tmp_path / "out.db", embedder=FakeEmbedder())
    with pytest.raises(StoreKeyError, match="key is wrong"):
        Mnemo.salvage(path, tmp_path / "out.db", key="not the key", embedder=FakeEmbedder())
    report, saved = salvaged(damaged_copy(path, "copy.db"), tmp_path / "out.db", key=KEY)
    assert saved == original and is_encrypted(tmp_path / "out.db")  # the rescued store stays encrypted
    page, lost = leaves(path, KEY)[1]
    bad = damaged_copy(path, "bad.db")
    flip(bad, (page - 1) * 4096 + 100, 8)  # an encrypted page that fails its check cannot be decrypted
    report, saved = salvaged(bad, tmp_path / "out2.db", key=KEY)
    assert set(saved) == set(original) - set(lost) and sorted(report["lost_ids"]) == sorted(lost)


def test_cli_names_and_runs_the_salvage(cli, store: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, _ = store
    page, lost = leaves(path)[0]
    bad = damaged_copy(path, "bad.db")
    flip(bad, (page - 1) * 4096, 16)
    r = cli("doctor", "--db", str(bad))  # the damage is found, and the way out named
    assert r.code == 1 and "--salvage" in r.out + r.err
    r = cli("list", "--db", str(bad), "--status", "active,superseded,archived,deleted", "--limit", "1000")
    assert r.code == 4 and "mnemo doctor --salvage NEW.db" in r.err
    out = tmp_path / "rescued.db"
    r = cli("doctor", "--db", str(bad), "--salvage", str(out))
    assert r.code == 0 and f"saved {N - len(lost)} of {N} memories" in r.out and "was not changed" in r.out
    assert cli("doctor", "--db", str(out)).code == 0
    r = cli("doctor", "--db", str(bad), "--salvage", str(tmp_path / "again.db"), "--json")
    assert r.code == 0 and r.json()["memories_saved"] == N - len(lost) and sorted(r.json()["lost_ids"]) == sorted(lost)
    # a store that does not even open says so, naming the salvage
    cut = damaged_copy(path, "cut.db")
    os.truncate(cut, cut.stat().st_size // 2)
    r = cli("stats", "--db", str(cut))
    assert r.code != 0 and "mnemo doctor --salvage" in r.err
    with pytest.raises(CorruptStoreError, match="doctor --salvage"):
        Mnemo(cut, embedder=FakeEmbedder())


def test_writes_still_in_the_write_ahead_log_are_saved(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": f"before {i}"} for i in range(20)], cause="save", dedup=False)
        m.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        m.remember_many([{"content": f"after {i}"} for i in range(20)], cause="save", dedup=False)
        # a crash now: the file and its log as they are on disk, with the newer writes in the log
        crashed = tmp_path / "crashed.db"
        shutil.copyfile(path, crashed)
        shutil.copyfile(f"{path}-wal", f"{crashed}-wal")
        original = snapshot(m)
    wal = digest(Path(f"{crashed}-wal"))
    report = Mnemo.salvage(crashed, tmp_path / "out.db", embedder=FakeEmbedder())
    assert report["memories_saved"] == 40 and digest(Path(f"{crashed}-wal")) == wal  # the log is not touched either
    with Mnemo(tmp_path / "out.db", embedder=FakeEmbedder()) as out:
        assert snapshot(out) == original


def test_cli_salvage_of_an_encrypted_store(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.db"
    make_store(path, key=KEY)
    r = cli("doctor", "--db", str(path), "--salvage", str(tmp_path / "out.db"))
    assert r.code != 0 and "only be salvaged with its key" in r.err and not (tmp_path / "out.db").exists()
    monkeypatch.setenv("MNEMO_KEY", KEY)
    r = cli("doctor", "--db", str(path), "--salvage", str(tmp_path / "out.db"), "--json")
    assert r.code == 0 and r.json()["memories_saved"] == N
    assert is_encrypted(tmp_path / "out.db") and cli("doctor", "--db", str(tmp_path / "out.db")).code == 0
