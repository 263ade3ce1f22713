"""Encryption at rest: no plaintext in any file the store writes; keys; convert safely."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fake_embedder import FakeEmbedder
from old_stores import v1_store

from mnemo import Mnemo, StoreKeyError
from mnemo._stores.sqlite_convert import conversion_leftovers, opens_with
from mnemo._stores.sqlite_file import SQLITE_HEADER, is_encrypted
from mnemo._stores.sqlite_rekey import convert

# encryption at rest is a property of the SQLite file
pytestmark = pytest.mark.sqlite_only

MARKER = "PLANTED-MARKER-7f3a 机密计划"
KEY = "correct horse battery staple"


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def _leaks(folder: Path, needles: list[bytes]) -> list[str]:
    found = []
    for p in _files(folder):
        data = p.read_bytes()
        found += [f"{p.name}: {n!r}" for n in needles if n in data]
    return found


def _needles() -> list[bytes]:
    words = ["PLANTED-MARKER-7f3a", "机密计划", "planted", "机密"]
    return [w.encode() for w in words] + [SQLITE_HEADER]


def test_encrypted_store_files_hold_no_plaintext_even_while_open(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    m = Mnemo(folder / "s.db", embedder=FakeEmbedder(), key=KEY)
    for i in range(50):
        m.remember(f"{MARKER} number {i}")
    assert m.recall("PLANTED-MARKER-7f3a")  # search works on the encrypted store
    assert (folder / "s.db-wal").exists()  # the WAL is live and must be encrypted too
    assert _leaks(folder, _needles()) == []
    m.close()
    assert _leaks(folder, _needles()) == []
    assert is_encrypted(folder / "s.db")
    assert stat.S_IMODE((folder / "s.db").stat().st_mode) == 0o600


def test_plaintext_store_does_show_the_marker(tmp_path: Path) -> None:
    """The leak check can fail: the same writes without a key are readable in the file."""
    folder = tmp_path / "plain"
    with Mnemo(folder / "s.db", embedder=FakeEmbedder()) as m:
        m.remember(MARKER)
    assert _leaks(folder, _needles())


def test_wrong_or_missing_key_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
        m.remember(MARKER)
    with pytest.raises(StoreKeyError, match="wrong key"):
        Mnemo(path, embedder=FakeEmbedder(), key="not the key")
    with pytest.raises(StoreKeyError, match="encrypted"):
        Mnemo(path, embedder=FakeEmbedder())
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:  # nothing was harmed
        assert m.stats()["total"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_encrypted_file_is_a_clear_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
        for i in range(30):
            m.remember(f"{MARKER} {i}")
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 3]
    else:
        for i in range(0, len(data), 997):
            data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises((StoreKeyError, Exception)) as info:
        with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
            m.stats()
            m.doctor()
    assert "Traceback" not in str(info.value)
    from mnemo import MnemoError

    assert isinstance(info.value, MnemoError), repr(info.value)


def test_convert_round_trip_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        ids = [m.remember(f"{MARKER} {i}").id for i in range(20)]
    before = path.read_bytes()[:16]
    assert before == SQLITE_HEADER
    report = convert(path, old_key=None, new_key=KEY)
    assert report["memories"] == 20 and is_encrypted(path)
    assert _leaks(tmp_path, _needles()) == []
    report = convert(path, old_key=KEY, new_key="a new key")
    with Mnemo(path, embedder=FakeEmbedder(), key="a new key") as m:
        assert [m.get(i).id for i in ids] == ids
    convert(path, old_key="a new key", new_key=None)
    assert not is_encrypted(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]  # no temporary files left


def test_failed_convert_leaves_the_original_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder()) as m:
        for i in range(10):
            m.remember(f"note {i}")
    original = path.read_bytes()

    import mnemo._stores.sqlite_rekey as sq

    def broken(conn):  # the verification step finds a different count
        return {"memories": -1, "events": 0, "embeddings": 0}

    calls = {"n": 0}
    real = sq._counts

    def counts(conn):
        calls["n"] += 1
        return real(conn) if calls["n"] == 1 else broken(conn)

    monkeypatch.setattr(sq, "_counts", counts)
    with pytest.raises(Exception, match="did not verify"):
        convert(path, old_key=None, new_key=KEY)
    assert path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["s.db"]


def test_cli_encryption_flow(cli, mnemo_home: Path) -> None:
    assert cli("init", "--encrypt").code == 0
    key_file = mnemo_home / "key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(mnemo_home.stat().st_mode) == 0o700
    assert cli("save", MARKER).code == 0
    assert cli("search", "PLANTED-MARKER-7f3a", "--json").json()["results"]
    assert _leaks(mnemo_home, [b"PLANTED-MARKER-7f3a", SQLITE_HEADER]) == []
    old_key = key_file.read_text()
    assert cli("rekey").code == 0
    assert key_file.read_text() != old_key
    assert cli("search", "PLANTED-MARKER-7f3a", "--json").json()["results"]
    r = cli("decrypt", "--json")
    assert r.code == 0 and r.json()["encrypted"] is False
    assert (mnemo_home / "memory.db").read_bytes()[:16] == SQLITE_HEADER
    assert cli("encrypt").code == 0 and is_encrypted(mnemo_home / "memory.db")
    os.chmod(key_file, 0o644)
    r = cli("stats")
    assert r.code == 0 and "chmod 600" in r.err
    os.environ["MNEMO_KEY"] = "wrong"
    try:
        r = cli("stats")
    finally:
        del os.environ["MNEMO_KEY"]
    assert r.code == 4 and r.err.startswith("error: ") and "wrong key" in r.err


def test_purge_leaves_no_trace_in_any_file(tmp_path: Path) -> None:
    folder = tmp_path / "plain"  # unencrypted, so a trace would be visible
    m = Mnemo(folder / "s.db", embedder=FakeEmbedder())
    keep = m.remember("an ordinary note that stays")
    gone = m.remember(f"{MARKER} to be purged")
    m.forget(gone.id)
    assert _leaks(folder, [b"PLANTED-MARKER-7f3a"])
    report = m.purge([gone.id])
    assert report["purged"] == 1
    assert _leaks(folder, [b"PLANTED-MARKER-7f3a", "机密计划".encode()]) == []
    tombstone = m.history(gone.id)
    assert [(e["kind"], e["data"]) for e in tombstone] == [("purged", {})]
    assert m.get(keep.id).content == "an ordinary note that stays"
    assert [h.memory.id for h in m.recall("ordinary note", min_score=0.0)] == [keep.id]
    m.close()


def test_purge_all_erases_store_and_backups(cli, mnemo_home: Path) -> None:
    assert cli("save", MARKER).code == 0
    db = mnemo_home / "memory.db"
    backup = db.with_name("memory.db.backup-v0-20260101000000")
    backup.write_bytes(b"pretend backup with PLANTED-MARKER-7f3a")
    r = cli("purge", "--all")
    assert r.code == 2 and "--yes" in r.err  # no confirmation, nothing happened
    assert cli("stats", "--json").json()["total"] == 1
    r = cli("purge", "--all", "--yes", "--json")
    assert r.code == 0 and r.json()["purged"] == 1 and str(backup) in r.json()["removed_files"]
    assert cli("stats", "--json").json()["all_records"] == 0
    assert _leaks(mnemo_home, [b"PLANTED-MARKER-7f3a", "机密计划".encode()]) == []


def test_a_conversion_killed_midway_leaves_the_original_and_its_leftovers_are_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
        m.remember(MARKER)
    original = path.read_bytes()
    # what a decrypt killed after the re-key step leaves: a plaintext copy beside the store
    leftover = tmp_path / ".s.db.convert-99999"
    leftover.write_bytes(SQLITE_HEADER + MARKER.encode())
    assert any(".s.db.convert-99999" in p for p in conversion_leftovers(path, KEY))  # what doctor says
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:  # the original still opens, intact
        assert m.stats()["total"] == 1
    assert not leftover.exists()  # the open erased it
    assert path.read_bytes()[:64] == original[:64]
    assert conversion_leftovers(path, KEY) == []
    leftover.write_bytes(SQLITE_HEADER + MARKER.encode())
    convert(path, old_key=KEY, new_key="k2")  # so does the next conversion
    assert not leftover.exists()
    assert _leaks(tmp_path, _needles()) == []


# ---------------------------------------------------------------- backups follow the store's key


def _v1_home(home: Path) -> Path:
    """A mnemo home whose store was migrated from schema v1 (so it has a migration backup) and
    then holds a few more memories; every memory holds MARKER."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = home / "memory.db"
    v1_store(db, f"{MARKER} v1")
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        for i in range(5):
            m.remember(f"{MARKER} {i}")
    assert len(list(home.glob("memory.db.backup-v1-*"))) == 1
    return db


def _backups(db: Path) -> list[Path]:
    return sorted(db.parent.glob(db.name + ".backup-*"))


def test_encrypt_encrypts_the_migration_backups_too(cli, mnemo_home: Path) -> None:
    """Finding 1: the plaintext migration backup stayed beside the encrypted store. Backups are
    encrypted with the store's key (not removed: they are the way back from a bad migration)."""
    db = _v1_home(mnemo_home)
    assert _leaks(mnemo_home, [b"PLANTED-MARKER-7f3a"])  # the store and its backup, in clear
    r = cli("encrypt", "--json")
    assert r.code == 0 and r.json()["backups"] == 1
    assert _leaks(mnemo_home, [b"PLANTED-MARKER-7f3a", "机密计划".encode(), SQLITE_HEADER]) == []
    key = (mnemo_home / "key").read_text().strip()
    assert all(opens_with(b, key) for b in _backups(db))
    assert conversion_leftovers(db, key) == []
    assert sorted(p.name for p in mnemo_home.iterdir() if p.name.startswith(".")) == []
    assert cli("stats", "--json").json()["total"] == 6
    r = cli("decrypt", "--json")  # and decrypt decrypts them: they stay usable without the key
    assert r.code == 0 and r.json()["backups"] == 1
    assert all(not is_encrypted(b) and opens_with(b, None) for b in _backups(db))
    assert conversion_leftovers(db, None) == []


def test_rekey_re_keys_the_backups(cli, mnemo_home: Path) -> None:
    """Finding 2: after rekey the backups still opened with the old key."""
    db = _v1_home(mnemo_home)
    assert cli("encrypt").code == 0
    old = (mnemo_home / "key").read_text().strip()
    assert cli("rekey").code == 0
    new = (mnemo_home / "key").read_text().strip()
    assert new != old and not (mnemo_home / "key.pending").exists()
    for b in _backups(db):
        assert opens_with(b, new) and not opens_with(b, old)
    assert opens_with(db, new) and not opens_with(db, old)
    assert conversion_leftovers(db, new) == []


def test_a_plaintext_backup_beside_an_encrypted_store_is_encrypted_on_open(cli, mnemo_home: Path) -> None:
    """What an older mnemo's `encrypt` left: the next open encrypts the backup with the store's key."""
    db = _v1_home(mnemo_home)
    backup = _backups(db)[0]
    saved = backup.read_bytes()
    assert cli("encrypt").code == 0
    backup.write_bytes(saved)  # the plaintext backup, as before this fix
    key = (mnemo_home / "key").read_text().strip()
    assert any("plaintext copy" in p for p in conversion_leftovers(db, key))
    assert cli("stats", "--json").json()["total"] == 6
    assert is_encrypted(backup) and opens_with(backup, key)
    assert _leaks(mnemo_home, [b"PLANTED-MARKER-7f3a", SQLITE_HEADER]) == []
    assert conversion_leftovers(db, key) == []


def test_a_backup_that_cannot_be_converted_stops_the_conversion_with_the_step(cli, mnemo_home: Path) -> None:
    db = _v1_home(mnemo_home)
    junk = db.with_name(db.name + ".backup-v0-20260101000000")
    junk.write_bytes(b"not a database at all, " * 100)
    before = db.read_bytes()
    r = cli("encrypt")
    assert r.code != 0 and junk.name in r.err and "delete it" in r.err and "unchanged" in r.err
    assert db.read_bytes() == before
    assert [p.name for p in mnemo_home.iterdir() if p.name.startswith(".")] == []
    junk.unlink()
    assert cli("encrypt").code == 0


# ---------------------------------------------------------------- an interrupted rekey


def _rekeyed_but_key_file_old(mnemo_home: Path) -> tuple[Path, str, str]:
    """The state a rekey killed between the store's swap and the key file's replacement left."""
    from mnemo._settings import keys

    assert cli_ok(mnemo_home)
    db = mnemo_home / "memory.db"
    old = (mnemo_home / "key").read_text().strip()
    new = "the new key from an interrupted rekey"
    (mnemo_home / "key.pending").write_text(new + "\n")
    os.chmod(mnemo_home / "key.pending", 0o600)
    convert(db, old_key=old, new_key=new)
    assert keys.pending_problem(str(db), mnemo_home / "key") is not None
    return db, old, new


def cli_ok(home: Path) -> bool:
    with Mnemo(home / "memory.db", embedder=FakeEmbedder(), key=None) as m:
        for i in range(3):
            m.remember(f"{MARKER} {i}")
    from mnemo._settings import keys

    k = keys.create_key_file(home / "key")
    convert(home / "memory.db", old_key=None, new_key=k.value)
    return True


def test_a_rekey_killed_after_the_swap_is_finished_by_the_next_command(cli, mnemo_home: Path) -> None:
    """Finding 4: every command said "wrong key" and nothing pointed to key.pending."""
    _db, _old, new = _rekeyed_but_key_file_old(mnemo_home)
    r = cli("stats", "--json")
    assert r.code == 0 and r.json()["total"] == 3
    assert "interrupted" in r.err  # it says what it did
    assert (mnemo_home / "key").read_text().strip() == new and not (mnemo_home / "key.pending").exists()


def test_rekey_after_a_killed_rekey_does_not_lose_the_key(cli, mnemo_home: Path) -> None:
    db, old, new = _rekeyed_but_key_file_old(mnemo_home)
    assert cli("rekey").code == 0  # finishes the interrupted one first, then re-keys
    latest = (mnemo_home / "key").read_text().strip()
    assert latest not in (old, new) and opens_with(db, latest)
    assert cli("stats", "--json").json()["total"] == 3


def test_a_pending_key_that_opens_the_store_is_never_overwritten(mnemo_home: Path) -> None:
    from mnemo import StoreKeyError as KeyErr
    from mnemo._settings import keys

    db, _old, new = _rekeyed_but_key_file_old(mnemo_home)
    with pytest.raises(KeyErr, match="not overwriting"):
        keys.write_pending(str(db), mnemo_home / "key", "yet another key")
    assert (mnemo_home / "key.pending").read_text().strip() == new


def test_a_stale_pending_key_is_removed(cli, mnemo_home: Path) -> None:
    """A rekey killed before the swap: key.pending opens nothing and goes; the key file still works."""
    assert cli_ok(mnemo_home)
    (mnemo_home / "key.pending").write_text("a key that opens nothing\n")
    assert cli("stats", "--json").json()["total"] == 3
    assert not (mnemo_home / "key.pending").exists()


def test_wrong_key_error_names_the_rekey_recovery(cli, mnemo_home: Path) -> None:
    assert cli_ok(mnemo_home)
    os.environ["MNEMO_KEY"] = "not it"
    try:
        r = cli("stats")
    finally:
        del os.environ["MNEMO_KEY"]
    assert r.code == 4 and "wrong key" in r.err and "MNEMO_NEW_KEY" in r.err and "key.pending" in r.err


def test_a_running_conversions_files_are_left_alone(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    path = tmp_path / "s.db"
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
        m.remember(MARKER)
    live = tmp_path / ".s.db.convert-4242"
    fd = os.open(live, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with Mnemo(path, embedder=FakeEmbedder(), key=KEY) as m:
            assert m.stats()["total"] == 1
        assert live.exists()
        assert any("running" in p for p in conversion_leftovers(path, KEY))
    finally:
        os.close(fd)
    with Mnemo(path, embedder=FakeEmbedder(), key=KEY):
        pass
    assert not live.exists()
