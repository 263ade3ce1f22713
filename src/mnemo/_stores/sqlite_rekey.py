"""Encrypt, decrypt or re-key a SQLite store: :func:`convert`, the one operation built from
:mod:`.sqlite_convert`'s pieces and the store class (which itself needs those pieces to finish or
undo a conversion that was killed, so the operation lives above both)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import apsw

from .._base.files import fsync_dir, fsync_path
from ..errors import StoreError, StoreKeyError
from .sqlite import SQLiteStore
from .sqlite_convert import _backups, _convert_copy, _counts, _hidden, _hold, _shred, _verified
from .sqlite_file import _connect, _private, _quote, read_only_error


def convert(path: str | os.PathLike[str], *, old_key: str | None, new_key: str | None, read_only: bool = False) -> dict[str, Any]:
    """Encrypt, decrypt or re-key a store and its migration backups so that a kill at any
    instant leaves a store that opens with the old key or the new one (the plan: :mod:`.sqlite_convert`):
    the backups' converted copies are made and verified first, then the store is copied,
    re-keyed, verified (integrity and counts) and swapped in atomically, then the backups.
    Until the swap the original is untouched; if anything fails it stays as it was. Other
    mnemo processes must not write to the store meanwhile. A read-only store (``read_only``, or
    one that cannot be written here) is refused before anything is made."""
    src_path = Path(path).expanduser()
    if old_key and old_key == new_key:
        raise StoreError("the new key is the same as the old one; nothing to do")
    src = SQLiteStore(src_path, create=False, key=old_key, read_only=read_only)  # opening finishes or undoes a killed conversion
    if src.read_only:
        src.close()
        raise read_only_error(src_path, src.read_only_reason)
    tmp = _hidden(src_path, "convert")
    held: list[int] = []
    made: list[Path] = []  # erased if this run fails before its commit point
    try:
        ready: list[tuple[Path, Path]] = []
        for backup in _backups(src_path):
            work = _hidden(backup, "convert")
            made.append(work)
            try:
                _convert_copy(backup, work, old_key, new_key, held)
                ok = _verified(work, new_key)
            except (apsw.Error, StoreKeyError) as exc:
                ok, why = False, str(exc)
            else:
                why = "the converted copy did not verify"
            if not ok:
                raise StoreError(f"cannot convert the backup {backup.name} ({why}); move it out of {backup.parent} "
                                 f"(or delete it), then run this again; {src_path} is unchanged")
            done = _hidden(backup, "ready")
            os.replace(work, done)
            made[-1] = done
            ready.append((done, backup))
        src.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts = _counts(src.conn)
        src.conn.execute("BEGIN IMMEDIATE")  # hold writers off while the file is copied
        try:
            held.append(_hold(tmp))
            made.append(tmp)
            shutil.copyfile(src_path, tmp)
        finally:
            src.conn.execute("ROLLBACK")
        _private(tmp)
        conn = _connect(tmp, old_key)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")  # SQLite3MC cannot re-key in WAL mode
            conn.execute(f"PRAGMA rekey = '{_quote(new_key or '')}'")
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        check = SQLiteStore(tmp, create=False, key=new_key)
        try:
            problems = check.integrity_problems()
            if problems or _counts(check.conn) != counts:
                raise StoreError(f"the converted copy did not verify ({problems or 'counts differ'}); {src_path} is unchanged")
            check.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            check.close()
        src.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
        fsync_path(tmp)
        os.replace(tmp, src_path)  # the commit point
        made = []  # from here on the ready backups belong to the new store: a failure leaves them for the next open
        fsync_dir(src_path.parent)
        for suffix in ("-wal", "-shm"):
            Path(f"{src_path}{suffix}").unlink(missing_ok=True)
        for done, backup in ready:
            os.replace(done, backup)
    finally:
        src.close()
        for p in made:
            for suffix in ("", "-journal", "-wal", "-shm"):
                _shred(Path(f"{p}{suffix}"))
        for fd in held:
            os.close(fd)
    return {"path": str(src_path), "encrypted": bool(new_key), "backups": len(ready), **counts}
