"""The SQLite store's file: opening it (with the key of an encrypted one, SQLite3 Multiple
Ciphers via ``apsw-sqlite3mc``) and telling an encrypted file from a plain one. Shared by the
store (``sqlite.py``) and the conversions between plain and encrypted (``sqlite_convert.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import apsw

from ..errors import StoreError, StoreKeyError

SQLITE_HEADER = b"SQLite format 3\x00"
#: how long a writer waits for another process's transaction before giving up
BUSY_TIMEOUT_MS = 60_000


def _connect(path: Path | str, key: str | None, flags: int | None = None) -> apsw.Connection:
    """A connection with the busy timeout set and, for an encrypted store, the key applied."""
    conn = apsw.Connection(str(path), flags=flags) if flags is not None else apsw.Connection(str(path))
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if key:
        try:
            conn.execute(f"PRAGMA key = '{_quote(key)}'")
        except BaseException:
            conn.close()
            raise
    return conn


def read_only_reason(path: Path) -> str | None:
    """Why the store at ``path`` (an existing file) can only be read here, or None when this
    process may write it: the file (or its write-ahead log or shared-memory index) is not
    writable, or its folder is not and the log files that a writer needs are not there yet.
    ``os.access`` also says no on a read-only mount, even to root."""
    if not os.access(path, os.W_OK):
        return "the file is not writable (a read-only file or mount)"
    side = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
    if any(p.exists() and not os.access(p, os.W_OK) for p in side):
        return "its write-ahead log files are not writable"
    if not os.access(path.parent, os.W_OK) and not all(p.exists() for p in side):
        return "its folder is not writable, so SQLite cannot create the write-ahead log beside it"
    return None


def read_only_error(path: Path, reason: str) -> StoreError:
    """The one error every write to a read-only store gives."""
    return StoreError(f"the store at {path} is read-only: {reason or 'SQLite cannot write it'}; "
                      "nothing was changed (copy it somewhere writable to change it)")


def unwritable(path: Path, exc: BaseException, reason: str = "") -> StoreError | None:
    """The :class:`StoreError` for an ``apsw`` error that says the store cannot be written now
    (read-only, a full disk, a disk error), or None for any other error."""
    if isinstance(exc, apsw.ReadOnlyError):
        return read_only_error(path, reason)
    if isinstance(exc, apsw.FullError):
        return StoreError(f"the disk holding {path} is full: free some space and try again (nothing was changed)")
    if isinstance(exc, apsw.IOError):
        return StoreError(f"{path} could not be written (a disk error?): nothing was changed; run `mnemo doctor`")
    return None


def connect_read_only(path: Path, key: str | None) -> apsw.Connection:
    """A connection that never writes the store (``SQLITE_OPEN_READONLY``).

    In WAL mode even a reader needs the ``-shm`` index beside the file. SQLite reads through an
    existing read-only ``-wal``/``-shm`` pair, and creates the pair itself where the folder is
    writable. Where neither works (a read-only folder or mount, and no log files), the store is
    opened ``immutable=1``: SQLite then reads the file alone, with no locks and no index. That
    is only right when nothing can change the file meanwhile, which is why it is the last
    resort and only taken when there is no write-ahead log: committed transactions that a log
    holds would be invisible, and a writer would have to create that log beside the file, in
    the folder we just failed to write. (A long-running reader also checks the file's identity
    between requests, see ``SQLiteStore.refresh``.)"""
    conn: apsw.Connection | None = None
    try:
        conn = _connect(path, key, apsw.SQLITE_OPEN_READONLY)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # reads the schema: needs the WAL index
        return conn
    except (apsw.ReadOnlyError, apsw.CantOpenError):
        if conn is not None:
            conn.close()
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(f"the store at {path} is read-only and its write-ahead log ({wal.name}) cannot be read "
                             "without its shared-memory index, which cannot be created here: open it once where "
                             "it is writable (or copy the three files somewhere writable)") from None
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    uri = "file:" + quote(str(path.absolute())) + "?immutable=1"
    conn = _connect(uri, key, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
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
