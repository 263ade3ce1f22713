"""The SQLite store (default): one file, WAL, FTS5 full-text rows and float32 vector blobs.

Uses ``apsw`` built with SQLite3 Multiple Ciphers (``apsw-sqlite3mc``): a current SQLite with
FTS5 on every platform, extension loading even where the system Python cannot, and encryption
at rest for the privacy work. apsw is not DB-API: it never opens transactions implicitly, so
every write here is an explicit ``BEGIN IMMEDIATE`` — taking the write lock up front is what lets
several processes write at once without "database is locked" (they queue on the busy timeout
instead of failing on a lock upgrade).

What both backends do alike (transactions, filtered reads, history, the auxiliary tables) is
``shared.SharedStore``, the row mapping ``rows``, the filters' SQL ``sql``; the schema is
``sqlite_schema``.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import apsw

from .._base.models import Memory, format_time, utcnow
from ..errors import CorruptStoreError, SchemaTooNewError, StoreError, StoreKeyError, StoreMissingError
from .base import Filters
from .rows import MEMORY_COLUMNS as _COLUMNS
from .rows import memory_values, row_to_memory, update_values
from .shared import SharedStore
from .sql import SQLITE, filter_clause, marks
from .sqlite_convert import _backups, conversion_leftovers, recover_conversions, stale_conversions
from .sqlite_file import BUSY_TIMEOUT_MS, SQLITE_HEADER, _connect, _private, connect_read_only, read_only_error, read_only_reason, unwritable
from .sqlite_schema import LATEST_VERSION, MIGRATIONS
from .traces import PurgeTraces

#: the least BM25 a full-text match counts for (see fts_search)
MIN_MATCH_BM25 = 0.5
#: how many times ``limit`` the full-text search ranks before filtering (see fts_search)
FTS_OVERFETCH = 2


class SQLiteStore(SharedStore, PurgeTraces):
    """Memories, history, relations and the derived index in one SQLite file."""

    _DIALECT = SQLITE

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, key: str | None = None,
                 read_only: bool = False):
        """Open (or create) the store at ``path``. With ``key`` the whole file is encrypted
        (SQLite3 Multiple Ciphers, ChaCha20-Poly1305): pages, WAL, full-text rows and vectors.
        With ``read_only`` (or by itself, when the file, its folder or the mount cannot be
        written) it is opened for reading only: reads work, a write raises :class:`StoreError`
        ("the store at PATH is read-only: …"), nothing is migrated or created."""
        self.path = Path(path).expanduser()
        self.url = str(self.path)
        self._key = key or None
        #: why this store is read-only here ("" when it is writable)
        self.read_only_reason = "it was opened read-only (read_only, MNEMO_READ_ONLY)" if read_only else ""
        self._asked_read_only = bool(read_only)
        self._create = create
        self._idle = False  # refresh(idle=True) let go of the connection; the next use opens it again
        if not self.path.exists():
            if not create or read_only:
                raise StoreMissingError(f"no mnemo store at {self.path} (run `mnemo init` to create one)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise StoreError(f"cannot create the store folder {self.path.parent}: {exc.strerror}") from None
        elif self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a mnemo store file")
        elif not self.path.is_file():  # a device, a FIFO, a socket: SQLite would write a journal beside it
            raise StoreError(f"{self.path} is not a regular file, so it cannot be a mnemo store")
        elif not read_only:
            self.read_only_reason = read_only_reason(self.path) or ""
        new = not self.path.exists() or self.path.stat().st_size == 0
        if new and self.read_only_reason:
            raise StoreError(f"the store at {self.path} is read-only ({self.read_only_reason}) and empty: "
                             "there is no mnemo store to read")
        self._open()
        self._txn_depth = 0
        self._vocab = False
        if new:
            _private(self.path)
        try:  # what an encrypt/decrypt/rekey killed midway left beside the store
            self.recovered = [] if self.read_only else recover_conversions(self.path, self._key)
        except OSError:
            self.recovered = []
        self._seen = self._file_state()  # what refresh() compares with (after the chmod above)

    @property
    def read_only(self) -> bool:
        """True when this store can only be read here (see ``read_only_reason``)."""
        return bool(self.read_only_reason)

    def _open(self) -> apsw.Connection:
        """A connection to the file, migrated and configured (checked only, when read-only)."""
        self.conn = None  # type: ignore[assignment]
        try:
            if not self.read_only:
                flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if self._create else 0)
                self.conn = _connect(self.path, self._key, flags)
                try:
                    self._check_and_migrate()
                    self._configure()
                except (apsw.ReadOnlyError, apsw.CantOpenError):
                    # writable by the look of it, yet SQLite cannot write (an odd mount, a lock file system)
                    if self.path.stat().st_size == 0:
                        raise
                    self.close()
                    self.read_only_reason = "SQLite cannot write the file here"
            if self.read_only:
                self.conn = connect_read_only(self.path, self._key)
                self._check_schema_read_only()
                self._configure()
        except apsw.NotADBError:
            self.close()
            raise self._unreadable() from None
        except apsw.CorruptError:
            self.close()
            raise CorruptStoreError(f"{self.path} is damaged (SQLite reports corruption); restore a backup, or rescue what can be read into a new store with `mnemo doctor --salvage NEW.db`") from None
        except (apsw.CantOpenError, apsw.ReadOnlyError, apsw.PermissionsError) as exc:
            self.close()
            raise StoreError(f"cannot open {self.path}: {exc}") from None
        except BaseException:
            self.close()
            raise
        return self.conn

    def _check_schema_read_only(self) -> None:
        """A read-only store is used as it is: never migrated, so it must be at this code's schema."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST_VERSION:
            raise SchemaTooNewError(
                f"{self.path} has schema version {version}, newer than this mnemo understands "
                f"({LATEST_VERSION}); upgrade mnemo (pip install -U mnemo)"
            )
        if version == 0:
            raise CorruptStoreError(f"{self.path} is not a mnemo store (an SQLite database without mnemo's schema)")
        if version < LATEST_VERSION:
            raise StoreError(
                f"the store at {self.path} is read-only ({self.read_only_reason}) and its schema (version {version}) "
                f"is older than this mnemo needs ({LATEST_VERSION}); it is upgraded when it is opened once where "
                "it can be written (or copy it somewhere writable)"
            )

    def _read_only_error(self) -> StoreError:
        return read_only_error(self.path, self.read_only_reason)

    def _unreadable(self) -> StoreError:
        """The right error for a file SQLite cannot read: wrong key, missing key, or not a store."""
        try:
            head = self.path.read_bytes()[:16]
        except OSError:
            head = b""
        if self._key is not None:
            if head == SQLITE_HEADER:
                return StoreKeyError(f"{self.path} is not encrypted, but a key was given (run `mnemo encrypt` to encrypt it)")
            return StoreKeyError(f"cannot open {self.path}: wrong key (or the file is damaged); after an interrupted "
                                 "`mnemo rekey` it opens with the new key: the MNEMO_NEW_KEY given to it, or the "
                                 "key file's key.pending (which mnemo uses by itself when it reads the key file)")
        if head != SQLITE_HEADER and len(head) == 16:
            return StoreKeyError(
                f"{self.path} is encrypted, or not a mnemo store at all (damaged): if it is encrypted, "
                "set MNEMO_KEY or keep its key file in the mnemo home; if it is damaged, `mnemo doctor --salvage NEW.db` "
                "rescues what can be read"
            )
        return CorruptStoreError(f"{self.path} is not a mnemo store (not an SQLite database, or damaged: "
                                 "`mnemo doctor --salvage NEW.db` rescues what can be read)")

    @property
    def encrypted(self) -> bool:
        return self._key is not None

    # ------------------------------------------------------------ lifecycle

    def _configure(self) -> None:
        if not self.read_only and self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA cache_size=-65536")  # 64 MiB: keeps FTS posting lists hot
        self.conn.execute("PRAGMA secure_delete=ON")  # deleted content is zeroed, not left in free pages

    def _check_and_migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST_VERSION:
            raise SchemaTooNewError(
                f"{self.path} has schema version {version}, newer than this mnemo understands "
                f"({LATEST_VERSION}); upgrade mnemo (pip install -U mnemo)"
            )
        if version == LATEST_VERSION:
            return
        if version != 0:
            self._backup(f"v{version}")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            # another process may have created or migrated the store while we waited for the lock
            current = self.conn.execute("PRAGMA user_version").fetchone()[0]
            if current == 0:
                tables = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                if tables:
                    raise CorruptStoreError(f"{self.path} is an SQLite database but not a mnemo store (it has tables {', '.join(tables[:5])})")
            for number, name, sql in MIGRATIONS:
                if number <= current:
                    continue
                if number == 1:
                    self.conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
                self.conn.execute(sql)
                self.conn.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", (number, name, format_time(utcnow())))
                self.conn.execute(f"PRAGMA user_version={int(number)}")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _backup(self, label: str) -> Path:
        """Copy the store beside itself before a migration (SQLite's online backup)."""
        target = self.path.with_name(f"{self.path.name}.backup-{label}-{utcnow():%Y%m%d%H%M%S}")
        dest = _connect(target, self._key)
        _private(target)
        try:
            with dest.backup("main", self.conn, "main") as b:
                b.step()
        finally:
            dest.close()
        return target

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._idle = False
        conn = self.__dict__.get("_conn")
        if conn is not None:
            self._conn = None
            conn.close()

    @property
    def conn(self) -> apsw.Connection:
        """The connection; opened again on first use after :meth:`refresh` let go of it."""
        conn = self.__dict__.get("_conn")
        if conn is None and self.__dict__.get("_idle"):
            self._idle = False
            self._reopen()
            conn = self._conn
        return conn  # type: ignore[return-value]

    @conn.setter
    def conn(self, value: apsw.Connection | None) -> None:
        self._conn = value

    # ------------------------------------------------------------ a file replaced under a long-running process
    # `cp other.db memory.db` rewrites the file in place (same inode) behind SQLite's back. In WAL
    # mode a connection trusts its page cache, and every connection the WAL index in ``-shm``
    # (which records the database's size in pages), until the WAL changes; a copy changes neither,
    # so the next write would mix the old store's pages and size into the new file. A process
    # that keeps the store (the warm service) calls ``refresh(idle=True)`` after each request: it
    # writes the WAL back and lets go of the file, so that while it waits nothing of the old
    # store is held open, and whoever opens the file next (this process, or a CLI command)
    # starts from the file alone. ``refresh()`` before a request notices a file changed meanwhile.

    def _file_state(self) -> tuple[int, ...] | None:
        """What changes whenever the file's bytes do: device, inode, size, mtime and ctime (the
        last one cannot be set back by ``cp -p``)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _note_own_write(self) -> None:
        """Our own commit may have checkpointed the WAL into the file: that change is ours."""
        self._seen = self._file_state()

    def _reopen(self) -> None:
        """Open the file at the path again (after :meth:`refresh` let go of it, or found it replaced)."""
        if not self.path.is_file():  # removed, or a folder now: never create an empty store in its place
            raise StoreMissingError(f"the store at {self.path} was removed while it was open")
        if not self._asked_read_only:  # a copy may be writable where the old file was not, or the reverse
            self.read_only_reason = read_only_reason(self.path) or ""
        self._vocab = False  # the temp table lived in the old connection
        self._open()

    def refresh(self, *, idle: bool = False) -> bool:
        """Catch up with the file between the requests of a long-running process. If the file
        was changed by something other than this store since it last looked (a copy over it; or
        another process's checkpoint, which costs only a reopening), the old connection is
        closed without writing anything into the file and the file is opened again: returns
        True then. With ``idle`` it then writes the WAL back into the file and lets go of it
        until the next use. Raises :class:`StoreError` when the file there now cannot be opened
        (the store stays closed)."""
        if self._txn_depth or (self.__dict__.get("_conn") is None and not self._idle):
            return False  # inside a transaction, or closed
        reopened = False
        if self._file_state() != self._seen:
            old = self.__dict__.get("_conn")
            self._conn = None
            self._idle = False
            if old is not None:
                # closed first, so that, with no other process holding the store, the next open
                # rebuilds the WAL index from the file; and with no checkpoint, which would copy
                # the old store's log into the new file
                old.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
                old.close()
            self._reopen()
            reopened = True
        conn = self.__dict__.get("_conn")
        if idle and conn is not None:
            if not self.read_only:
                conn.setbusytimeout(100)  # a reader holding a snapshot: the log is written back later
                try:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except apsw.Error:
                    pass  # busy, full: the log stays, nothing is lost
            self._conn = None
            self._idle = True
            conn.close()  # the last connection also removes the emptied WAL
        self._seen = self._file_state()
        return reopened

    @contextmanager
    def _outer_transaction(self) -> Iterator[None]:
        """The outermost write transaction: ``BEGIN IMMEDIATE`` takes the write lock up front.

        A store that cannot be written (read-only, a full disk, a disk error) raises
        :class:`StoreError`, never a raw ``apsw`` error, so that a caller writing only a cache
        (the anchors' vectors, access counts) can skip it and go on."""
        if self.read_only:
            raise self._read_only_error()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except apsw.ReadOnlyError:
            raise self._read_only_error() from None
        self._txn_depth = 1
        try:
            yield
        except BaseException as exc:
            self._txn_depth = 0
            if self.conn.in_transaction:  # SQLite may have rolled back by itself (a full disk, an I/O error)
                self.conn.execute("ROLLBACK")
            self._note_own_write()
            better = unwritable(self.path, exc, self.read_only_reason)
            if better is None:
                raise
            raise better from None
        self._txn_depth = 0
        try:
            self.conn.execute("COMMIT")
        except apsw.Error as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            better = unwritable(self.path, exc, self.read_only_reason)
            if better is None:
                raise
            raise better from None
        finally:
            self._note_own_write()

    # ------------------------------------------------------------ primitives of the shared methods (shared.py)

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, args).fetchall()

    def _row(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        # every row is read, so an INSERT … RETURNING has finished its statement before it returns
        rows = self.conn.execute(sql, args).fetchall()
        return rows[0] if rows else None

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        self.conn.execute(sql, args)
        return int(self.conn.changes())

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    # ------------------------------------------------------------ meta

    @property
    def schema_version(self) -> int:
        """The store's schema version (``PRAGMA user_version``: the last migration applied)."""
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def schema_versions(self) -> tuple[int, int]:
        """``(this store's schema version, the latest this code knows)`` (``mnemo doctor``)."""
        return self.schema_version, LATEST_VERSION

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ------------------------------------------------------------ writes (call inside transaction())

    def _next_seq(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM memories").fetchone()[0])

    def insert(self, mem: Memory, *, embed_hash: str, tokens: str, cause: str) -> None:
        """Insert a memory, its full-text row and its 'created' event."""
        seq = self._next_seq()
        self.conn.execute(f"INSERT INTO memories ({_COLUMNS}, embed_hash, seq) VALUES ({marks(22)})",
                          (*memory_values(mem), embed_hash, seq))
        pk = self.conn.last_insert_rowid()
        self.conn.execute("INSERT INTO memory_fts (rowid, tokens) VALUES (?, ?)", (pk, tokens))
        self.add_event(mem.id, "created", cause, {"source": mem.source})

    def add_event(self, memory_id: str, kind: str, cause: str | None, data: dict[str, Any] | None = None) -> None:
        self.conn.execute(
            "INSERT INTO events (memory_id, kind, at, cause, data) VALUES (?, ?, ?, ?, ?)",
            (memory_id, kind, format_time(utcnow()), cause, json.dumps(data or {}, ensure_ascii=False)),
        )

    def set_status(self, memory_id: str, status: str, *, superseded_by: str | None = None) -> None:
        self.conn.execute(
            "UPDATE memories SET status = ?, superseded_by = ?, updated_at = ?, seq = ? WHERE id = ?",
            (status, superseded_by, format_time(utcnow()), self._next_seq(), memory_id),
        )

    def put_embeddings(self, model: str, rows: Iterable[tuple[str, int, bytes]]) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO embeddings (model, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
            ((model, h, d, v) for h, d, v in rows),
        )

    def update_fields(self, memory_id: str, **fields: Any) -> None:
        """Change fields of a memory and bump ``updated_at`` (and ``seq``: the index may care).
        ``tokens`` rewrites its full-text row; ``embed_hash`` points it at another vector."""
        values, tokens = update_values(fields)
        sets = "".join(f"{k} = ?, " for k in values)
        self.conn.execute(
            f"UPDATE memories SET {sets}updated_at = ?, seq = ? WHERE id = ?",
            (*values.values(), format_time(utcnow()), self._next_seq(), memory_id),
        )
        if tokens is not None:
            pk = self.pk_of(memory_id)
            if pk is not None:
                self.set_fts(pk, tokens)

    def add_relation(self, src: str, dst: str, kind: str, strength: float) -> None:
        self.conn.execute(
            "INSERT INTO relations (src, dst, kind, strength, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (src, dst, kind) DO UPDATE SET strength = excluded.strength",
            (src, dst, kind, float(strength), format_time(utcnow())),
        )

    def relations(self, memory_id: str) -> list[dict[str, Any]]:
        """Links from and to a memory: ``{"id", "kind", "direction", "strength"}``."""
        out = []
        for src, dst, kind, strength in self.conn.execute(
            "SELECT src, dst, kind, strength FROM relations WHERE src = ? OR dst = ? ORDER BY strength DESC", (memory_id, memory_id)
        ):
            out.append({"id": dst if src == memory_id else src, "kind": kind, "direction": "out" if src == memory_id else "in", "strength": strength})
        return out

    def expired(self, now: str, limit: int) -> list[Memory]:
        """Active memories whose expiry or review date has passed."""
        return [row_to_memory(r) for r in self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ? "
            "ORDER BY expires_at LIMIT ?", (now, limit))]

    def unused_since(self, cutoff: str, *, min_importance: float, limit: int) -> list[Memory]:
        """Active, unpinned memories below ``min_importance`` not used (accessed, or stored)
        since ``cutoff``: the later of the last access and the moment they entered the store."""
        return [row_to_memory(r) for r in self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE status = 'active' AND pinned = 0 AND importance < ? "
            "AND MAX(COALESCE(last_accessed_at, ''), COALESCE(stored_at, created_at)) < ? ORDER BY stored_at LIMIT ?",
            (min_importance, cutoff, limit))]

    @contextmanager
    def rolled_back(self) -> Iterator[None]:
        """A write transaction that is always rolled back (self-tests that must leave no trace)."""
        if self.read_only:
            raise self._read_only_error()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.conn.execute("ROLLBACK")

    def set_fts(self, pk: int, tokens: str) -> None:
        self.conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
        self.conn.execute("INSERT INTO memory_fts (rowid, tokens) VALUES (?, ?)", (pk, tokens))

    def touch(self, ids: Sequence[str], at: str) -> None:
        """Count an access (does not bump ``seq``: the index does not care)."""
        self.conn.executemany(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
            ((at, i) for i in ids),
        )

    def purge_rows(self, memory_ids: Sequence[str]) -> int:
        """Hard-delete memories with their full-text rows, relations, unshared vectors and
        history, leaving one content-free ``purged`` tombstone event each. Returns how many."""
        n = 0
        for mid in memory_ids:
            row = self.conn.execute("SELECT pk, embed_hash FROM memories WHERE id = ?", (mid,)).fetchone()
            if row is None:
                continue
            pk, embed_hash = row
            self.conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (pk,))
            self.conn.execute("DELETE FROM memories WHERE pk = ?", (pk,))
            self.conn.execute("DELETE FROM relations WHERE src = ? OR dst = ?", (mid, mid))
            if self.conn.execute("SELECT 1 FROM memories WHERE embed_hash = ? LIMIT 1", (embed_hash,)).fetchone() is None:
                self.conn.execute("DELETE FROM embeddings WHERE text_hash = ?", (embed_hash,))
            self.conn.execute("DELETE FROM events WHERE memory_id = ?", (mid,))
            self.add_event(mid, "purged", "purge", {})
            n += 1
        return n

    def purge_everything(self) -> int:
        """Delete every memory, event, relation, vector and full-text row."""
        n = int(self.conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        self.conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('delete-all')")
        for table in ("memories", "events", "relations", "embeddings", "sources", "injections", "session_state", "jobs"):
            self.conn.execute(f"DELETE FROM {table}")
        for key in ("embedder", "dim"):
            self.delete_meta(key)
        return n

    def scrub(self, *, wait: float = 10.0) -> bool:
        """Leave no trace of deleted rows: merge the full-text index, rewrite the file without
        free pages (VACUUM) and empty the WAL. ``secure_delete`` zeroes pages as they are freed.
        Another process reading the store holds its snapshot in the WAL, and then neither can
        be emptied: this retries for ``wait`` seconds and returns False if traces remain (the
        caller must say so: the old pages are only gone once that reader lets go)."""
        self.conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
        deadline = time.monotonic() + wait
        self.conn.setbusytimeout(200)  # short tries in a loop we bound, not one wait of a minute
        try:
            while True:
                try:
                    self.conn.execute("VACUUM")
                    busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    if not busy:  # every frame copied back and the WAL truncated
                        return True
                except apsw.BusyError:
                    pass
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)
        finally:
            self.conn.setbusytimeout(BUSY_TIMEOUT_MS)

    def backup_files(self) -> list[Path]:
        """Migration backups and other copies mnemo wrote beside the store."""
        return _backups(self.path) + stale_conversions(self.path)

    def conversion_leftovers(self) -> list[str]:
        """``mnemo doctor``'s encryption leftovers (see :func:`conversion_leftovers`)."""
        return conversion_leftovers(self.path, self._key)

    def child_connection(self) -> tuple[str, dict[str, str]]:
        """How a child process (the background capture) opens this store: its path, no extra environment."""
        return str(self.path), {}

    def drop_embeddings_except(self, model: str) -> int:
        n = self.conn.execute("SELECT COUNT(*) FROM embeddings WHERE model != ?", (model,)).fetchone()[0]
        self.conn.execute("DELETE FROM embeddings WHERE model != ?", (model,))
        return int(n)

    # ------------------------------------------------------------ reads

    def get(self, memory_id: str) -> Memory | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else row_to_memory(row)

    def get_many_by_pk(self, pks: Sequence[int]) -> dict[int, Memory]:
        if not pks:
            return {}
        out: dict[int, Memory] = {}
        for i in range(0, len(pks), 500):
            chunk = list(pks[i : i + 500])
            for row in self.conn.execute(f"SELECT pk, {_COLUMNS} FROM memories WHERE pk IN ({marks(len(chunk))})", chunk):
                out[row[0]] = row_to_memory(row[1:])
        return out

    def scoring_rows(self, pks: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """What ranking needs of each candidate, ``pk -> (importance, confidence, access_count,
        created_epoch, last_accessed_epoch, stored_epoch, pinned, type, scope)`` (the candidates
        come from channels that applied the filters already)."""
        out: dict[int, tuple[Any, ...]] = {}
        for i in range(0, len(pks), 500):
            chunk = list(pks[i : i + 500])
            sql = (
                "SELECT pk, importance, confidence, access_count, unixepoch(created_at), unixepoch(last_accessed_at), "
                f"unixepoch(COALESCE(stored_at, created_at)), pinned, type, scope FROM memories WHERE pk IN ({marks(len(chunk))})"
            )
            for pk, imp, conf, acc, created, last, stored, pinned, kind, scope in self.conn.execute(sql, chunk):
                out[pk] = (imp, conf, acc, float(created), None if last is None else float(last), float(stored), bool(pinned), kind, scope)
        return out

    def fts_row_count(self) -> int:
        """Rows in the full-text index (every memory, any status)."""
        return int(self.conn.execute("SELECT COALESCE(MAX(pk), 0) FROM memories").fetchone()[0])

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """How many full-text rows contain each single-token term (fts5vocab, one lookup each)."""
        if not self._vocab:
            self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_vocab USING fts5vocab(main, memory_fts, 'row')")
            self._vocab = True
        out: dict[str, int] = {}
        for term in terms:
            row = self.conn.execute("SELECT doc FROM temp.memory_vocab WHERE term = ?", (term,)).fetchone()
            out[term] = 0 if row is None else int(row[0])
        return out

    def pk_of(self, memory_id: str) -> int | None:
        row = self.conn.execute("SELECT pk FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else int(row[0])

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = list(ids[i : i + 500])
            found.update(r[0] for r in self.conn.execute(f"SELECT id FROM memories WHERE id IN ({marks(len(chunk))})", chunk))
        return found

    def existing_hashes(self, pairs: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which ``(content_hash, scope)`` pairs already have a memory (any status but deleted)."""
        found: set[tuple[str, str]] = set()
        for h, s in pairs:
            row = self.conn.execute("SELECT 1 FROM memories WHERE content_hash = ? AND scope = ? AND status != 'deleted' LIMIT 1", (h, s)).fetchone()
            if row:
                found.add((h, s))
        return found

    def find_by_hash(self, content_hash: str, scope: str) -> Memory | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE content_hash = ? AND scope = ? AND status = 'active' LIMIT 1",
            (content_hash, scope),
        ).fetchone()
        return None if row is None else row_to_memory(row)

    def get_embeddings(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for i in range(0, len(hashes), 500):
            chunk = list(hashes[i : i + 500])
            for h, v in self.conn.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks(len(chunk))})",
                [model, *chunk],
            ):
                out[h] = v
        return out

    def iter_all(self, statuses: Sequence[str] | None = None) -> Iterator[Memory]:
        if statuses:
            cur = self.conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE status IN ({marks(len(statuses))}) ORDER BY pk", list(statuses))
        else:
            cur = self.conn.execute(f"SELECT {_COLUMNS} FROM memories ORDER BY pk")
        for row in cur:
            yield row_to_memory(row)

    def fts_search(self, match: str, filters: Filters, limit: int) -> list[tuple[int, float]]:
        """Up to ``limit`` ``(pk, bm25)`` pairs, best first (bm25 made positive: higher is better).

        FTS5 ranks a MATCH alone about twice as fast as when every matched row is also joined to
        its memory to test the filters (100k memories: ~2 against ~4.5 ms), and most rows pass
        them; so the best ``FTS_OVERFETCH`` × ``limit`` are ranked alone and then filtered, and
        only when the filters keep fewer than ``limit`` of them (a narrow scope or tag) while
        more matched is the match ranked again within the filters."""
        where, args = filter_clause(filters, SQLITE)
        fetch = FTS_OVERFETCH * limit
        try:
            # NOT INDEXED: the few ranked rows are looked up by pk; an index on a filter column
            # would have the planner walk every memory of that scope or status instead
            ranked = self.conn.execute(
                "SELECT f.rowid, f.s, m.pk IS NOT NULL FROM (SELECT rowid, -bm25(memory_fts) AS s FROM memory_fts "
                "WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts) LIMIT ?) f "
                f"LEFT JOIN memories m NOT INDEXED ON m.pk = f.rowid AND {where} ORDER BY f.s DESC", [match, fetch, *args]).fetchall()
            found = [(pk, score) for pk, score, passes in ranked if passes][:limit]
            if len(found) < limit and len(ranked) == fetch:
                found = self.conn.execute(
                    "SELECT f.rowid, -bm25(memory_fts) FROM memory_fts f JOIN memories m ON m.pk = f.rowid "
                    f"WHERE memory_fts MATCH ? AND {where} ORDER BY bm25(memory_fts) LIMIT ?", [match, *args, limit]).fetchall()
        except apsw.SQLError:
            return []  # a query the FTS5 grammar rejects matches nothing rather than failing
        # FTS5 clamps the IDF of a word found in half the rows or more to ~0, so in a small
        # store a real match would score nothing; a match is always worth something.
        return [(int(pk), max(float(s), MIN_MATCH_BM25)) for pk, s in found]

    def max_seq(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0])

    def vector_rows(self, model: str, after_seq: int) -> Iterator[tuple[Any, ...]]:
        """``(pk, seq, scope, type, status, created_epoch, expires_epoch|None, tags_json, vector|None, importance)``
        changed after ``after_seq``: the rows of the in-memory vector index, with every filter column."""
        return self.conn.execute(
            "SELECT m.pk, m.seq, m.scope, m.type, m.status, unixepoch(m.created_at), unixepoch(m.expires_at), m.tags, e.vector, m.importance "
            "FROM memories m LEFT JOIN embeddings e ON e.model = ? AND e.text_hash = m.embed_hash "
            "WHERE m.seq > ? ORDER BY m.seq",
            (model, after_seq),
        )

    def missing_embeddings(self, model: str, after_pk: int, limit: int) -> list[tuple[int, str, str, str]]:
        """Memories whose embedded text has no vector for ``model``: ``(pk, id, content, embed_hash)``."""
        return [
            (int(r[0]), r[1], r[2], r[3])
            for r in self.conn.execute(
                "SELECT m.pk, m.id, m.content, m.embed_hash FROM memories m WHERE m.pk > ? AND NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = m.embed_hash) ORDER BY m.pk LIMIT ?",
                (after_pk, model, limit),
            )
        ]

    def count_missing_embeddings(self, model: str) -> int:
        return int(self.conn.execute(
            "SELECT COUNT(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.text_hash = m.embed_hash)",
            (model,),
        ).fetchone()[0])

    def fts_rows_after(self, after_pk: int, limit: int) -> list[tuple[int, str]]:
        return [(int(r[0]), r[1]) for r in self.conn.execute("SELECT pk, content FROM memories WHERE pk > ? ORDER BY pk LIMIT ?", (after_pk, limit))]

    def count_embeddings(self, model: str | None = None) -> int:
        if model is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0])

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def integrity_problems(self) -> list[str]:
        try:
            rows = [r[0] for r in self.conn.execute("PRAGMA quick_check")]
        except apsw.CorruptError as exc:  # damage the check itself trips over is still its answer
            return [f"SQLite reports corruption: {exc}"]
        return [] if rows == ["ok"] else rows
