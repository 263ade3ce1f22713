"""The SQLite store's file: opening it (with the key of an encrypted one, SQLite3 Multiple
Ciphers via ``apsw-sqlite3mc``) and telling an encrypted file from a plain one. Shared by the
store (``sqlite.py``) and the conversions between plain and encrypted (``sqlite_convert.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from ..errors import StoreKeyError

SQLITE_HEADER = b"SQLite format 3\x00"
#: how long a writer waits for another process's transaction before giving up
BUSY_TIMEOUT_MS = 60_000


def _connect(path: Path, key: str | None, flags: int | None = None) -> apsw.Connection:
    """A connection with the busy timeout set and, for an encrypted store, the key applied."""
    conn = apsw.Connection(str(path), flags=flags) if flags is not None else apsw.Connection(str(path))
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if key:
        conn.execute(f"PRAGMA key = '{_quote(key)}'")
    return conn


def _quote(key: str) -> str:
    if "\x00" in key:
        raise StoreKeyError("an encryption key cannot contain NUL characters")
    return key.replace("'", "''")


def _private(path: Path) -> None:
    """Store files are the owner's alone (0600)."""
    try:
        os.chmod(path, 0o600)
    except OSError:
        pass


def is_encrypted(path: str | os.PathLike[str]) -> bool:
    """True when the file exists, is not empty, and does not start with SQLite's plaintext header."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    return len(head) == 16 and head != SQLITE_HEADER


# ---------------------------------------------------------------- encrypt, decrypt, rekey
# A conversion (``convert``) makes every new file beside the old one under a hidden name that a
# killed run can be recognised by, and has one commit point: the store's own swap.
#
#   .<file>.convert-PID   a copy being converted (never trusted: erased by whoever finds it)
#   .<file>.ready-PID     a backup's converted and verified copy, waiting for the commit point
#
# 1. every migration backup is copied and converted to ``.<backup>.ready-PID`` (backups follow
#    the store's key: an encrypted store has no plaintext backup, a re-keyed one none that the
#    old key opens, a decrypted one none that still needs the key);
# 2. the store is copied, converted, verified and renamed over the store: the commit point;
# 3. each ready backup is renamed over its backup.
#
# Killed before 2, the store is untouched and every hidden file is erased by the next open;
# killed after it, the next open renames each ready backup (it opens as the store now does)
# over its backup. A live conversion holds a lock (flock) on each of its files, so other
# processes leave them alone. Leftovers are overwritten with zeros before they are removed.
