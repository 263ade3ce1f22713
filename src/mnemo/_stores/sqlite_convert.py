"""The pieces of encrypting, decrypting and re-keying a SQLite store and its migration backups
so that a ``kill -9`` at any instant loses nothing and leaves no plaintext behind.

A conversion (:func:`.sqlite_rekey.convert`) builds checked copies under
hidden names beside the originals, then swaps the store file in (the one commit point), then
the backups; the next open of the store finishes or undoes a conversion that was killed
(:func:`recover_conversions`), and ``mnemo doctor`` names what is left (:func:`conversion_leftovers`).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from pathlib import Path

import apsw

try:
    import fcntl
except ImportError:  # Windows: no flock; a leftover is then anything another process left
    fcntl = None  # type: ignore[assignment]

from .._base.files import held_by_another
from ..errors import StoreKeyError
from .sqlite_file import _connect, _private, _quote, is_encrypted

_LEFTOVER_KINDS = ("convert", "ready")


def opens_with(path: str | os.PathLike[str], key: str | None) -> bool:
    """Whether the SQLite file at ``path`` opens with ``key`` (None: as a plaintext file)."""
    try:
        conn = _connect(Path(path), key or None, apsw.SQLITE_OPEN_READWRITE)
    except (apsw.Error, StoreKeyError):
        return False
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return True
    except apsw.Error:
        return False
    finally:
        conn.close()


def _hidden(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}")


def _hold(path: Path) -> int:
    """Create ``path`` (0600, emptied) and lock it for as long as this process works on it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _in_use(path: Path) -> bool:
    """Whether a live conversion holds ``path`` (its lock; without flock, whether it is ours)."""
    held = held_by_another(path)
    return path.name.rsplit("-", 1)[-1] == str(os.getpid()) if held is None else held


def _shred(path: Path) -> None:
    """Overwrite a file with zeros, then remove it (a half-decrypted copy holds plaintext)."""
    try:
        size = path.stat().st_size
        with path.open("r+b") as fh:
            while size > 0:
                n = min(size, 1 << 20)
                fh.write(b"\0" * n)
                size -= n
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        pass
    path.unlink(missing_ok=True)


def _leftovers(path: Path) -> list[tuple[Path, Path, str, list[Path]]]:
    """Hidden conversion files beside the store: ``(file, the file it converts, kind, its
    -journal/-wal/-shm)``, also for the suffix files whose main file is gone."""
    pattern = re.compile(rf"^\.(?P<target>{re.escape(path.name)}(?:\.backup-.+?)?)\.(?P<kind>convert|ready)-(?P<pid>\d+)(?P<suffix>-journal|-wal|-shm)?$")
    found: dict[Path, tuple[Path, str, list[Path]]] = {}
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    for name in sorted(names):
        match = pattern.match(name)
        if not match:
            continue
        base = path.with_name(name[: len(name) - len(match["suffix"] or "")])
        entry = found.setdefault(base, (path.with_name(match["target"]), match["kind"], []))
        if match["suffix"]:
            entry[2].append(path.with_name(name))
    return [(base, target, kind, extra) for base, (target, kind, extra) in found.items()]


def _backups(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.glob(f"{glob.escape(path.name)}.backup-*")
                  if p.is_file() and not p.name.endswith(("-journal", "-wal", "-shm")))


def _convert_copy(src: Path, work: Path, old_key: str | None, new_key: str | None, held: list[int]) -> None:
    """Copy ``src`` to ``work`` (locked, 0600) and change the copy's key in place."""
    held.append(_hold(work))
    shutil.copyfile(src, work)
    _private(work)
    conn = _connect(work, old_key)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")  # SQLite3MC cannot re-key in WAL mode
        conn.execute(f"PRAGMA rekey = '{_quote(new_key or '')}'")
    finally:
        conn.close()


def _verified(path: Path, key: str | None) -> bool:
    if not opens_with(path, key):
        return False
    conn = _connect(path, key)
    try:
        return [r[0] for r in conn.execute("PRAGMA quick_check")] == ["ok"]
    except apsw.Error:
        return False
    finally:
        conn.close()


def recover_conversions(path: str | os.PathLike[str], key: str | None) -> list[str]:
    """Finish or undo what a killed ``convert`` left beside the store at ``path``, which has just
    opened with ``key``: a ready backup copy that opens as the store does (the run got past its
    commit point) replaces its backup, every other hidden copy is erased (zeroed, removed);
    then a plaintext backup beside an encrypted store is encrypted with the store's key (left
    by a run that was killed, or by a mnemo before 0.x that did not convert backups). Files a
    live conversion holds are left alone. Returns what it did, one line each."""
    p = Path(path)
    done: list[str] = []
    busy: set[Path] = set()
    for base, target, kind, extra in _leftovers(p):
        if base.exists() and _in_use(base):
            busy.add(target)
            continue
        if kind == "ready" and target != p and base.exists() and opens_with(base, key):
            try:
                os.replace(base, target)
                done.append(f"finished converting the backup {target.name} (a conversion was interrupted)")
                continue
            except OSError:
                pass
        for f in (base, *extra):
            _shred(f)
        done.append(f"removed {base.name}, left by an encrypt/decrypt/rekey that was interrupted")
    if key:
        for backup in _backups(p):
            if backup in busy or is_encrypted(backup) or backup.stat().st_size == 0:
                continue
            held: list[int] = []
            work = _hidden(backup, "convert")
            try:
                _convert_copy(backup, work, None, key, held)
                if _verified(work, key):
                    os.replace(work, backup)
                    done.append(f"encrypted the plaintext backup {backup.name} with the store's key")
            except (OSError, apsw.Error, StoreKeyError):
                pass
            finally:
                for suffix in ("", "-journal"):
                    if Path(f"{work}{suffix}").exists():
                        _shred(Path(f"{work}{suffix}"))
                for fd in held:
                    os.close(fd)
    return done


def conversion_leftovers(path: str | os.PathLike[str], key: str | None = None) -> list[str]:
    """What ``mnemo doctor`` should say about encryption leftovers beside the store at ``path``
    (opened with ``key``): hidden copies of an interrupted conversion, backups that do not open
    as the store does (plaintext beside an encrypted store, another key's, or encrypted beside a
    plaintext store). One line each, with what to do; empty when all is well."""
    p = Path(path)
    out: list[str] = []
    for base, target, kind, extra in _leftovers(p):
        if base.exists() and _in_use(base):
            out.append(f"{base.name}: an encrypt/decrypt/rekey is running on {target.name} (let it finish)")
        else:
            out.append(f"{base.name}: left by an interrupted encrypt/decrypt/rekey; opening the store "
                       "(any mnemo command) finishes or removes it")
    for backup in _backups(p):
        if opens_with(backup, key):
            continue
        if key and not is_encrypted(backup):
            out.append(f"{backup.name}: a plaintext copy beside the encrypted store; opening the store "
                       "(any mnemo command) encrypts it, or delete it")
        elif key:
            out.append(f"{backup.name}: a migration backup the store's key does not open (made before a rekey, "
                       "or damaged); it is readable with an older key: delete it")
        else:
            out.append(f"{backup.name}: a backup that does not open without a key beside the plaintext store "
                       "(encrypted with an old key, or damaged); delete it, or keep it with that key")
    return out


def stale_conversions(path: Path) -> list[Path]:
    """Every hidden file a conversion makes beside the store (``purge --all`` removes them)."""
    out: list[Path] = []
    for base, _target, _kind, extra in _leftovers(path):
        out += [f for f in (base, *extra) if f.exists()]
    return out


def _counts(conn: apsw.Connection) -> dict[str, int]:
    return {
        "memories": int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]),
        "events": int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]),
        "embeddings": int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]),
    }
