"""A read-only key → two-strings table in a SQLite file of its own: derived data that can always
be built again (recall's dictionary, ``_recall/dictionary.py``). Kept here because only the
stores wing speaks SQL."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

import apsw


class LookupTable:
    """Rows of ``(key, first, second)``; :meth:`get` answers many keys in one query."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, path: Path) -> LookupTable | None:
        """The table in ``path``, or None when there is none or it is not a table of ours."""
        if not path.is_file():
            return None
        try:
            conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
            conn.execute("SELECT key, first, second FROM entries LIMIT 1").fetchall()
        except apsw.Error:
            return None
        return cls(conn)

    @classmethod
    def build(cls, rows: Iterable[tuple[str, str, str]], path: Path | None = None) -> LookupTable:
        """Write ``rows`` to ``path`` whole or not at all (another process building the same file
        at the same time loses nothing), then open it; in memory when ``path`` is None. Raises
        OSError when the file cannot be written."""
        if path is None:
            conn = apsw.Connection(":memory:")
            _fill(conn, rows)
            return cls(conn)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            conn = apsw.Connection(str(tmp))
            try:
                _fill(conn, rows)
            finally:
                conn.close()
            os.replace(tmp, path)
        except apsw.Error as exc:  # a full disk, a folder that cannot be written
            raise OSError(f"{path}: {exc}") from exc
        finally:
            if tmp.exists():
                tmp.unlink()
        table = cls.open(path)
        if table is None:
            raise OSError(f"{path} could not be read back")
        return table

    def get(self, keys: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``key → (first, second)`` for the keys the table holds."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self._conn.execute(f"SELECT key, first, second FROM entries WHERE key IN ({','.join('?' * len(wanted))})", wanted)
        return {k: (a, b) for k, a, b in rows}


def _fill(conn: apsw.Connection, rows: Iterable[tuple[str, str, str]]) -> None:
    with conn:  # one transaction
        conn.execute("CREATE TABLE entries (key TEXT PRIMARY KEY, first TEXT NOT NULL, second TEXT NOT NULL) WITHOUT ROWID")
        conn.executemany("INSERT INTO entries VALUES (?, ?, ?)", rows)
