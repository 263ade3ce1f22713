"""The Store methods both backends run with the same code and SQL: nested transactions, the
reads that take :class:`~mnemo._stores.base.Filters`, a memory's history, and the auxiliary
tables (migration 3: ingested sources, the injection log, per-session state, LLM usage,
background jobs).

A mixin of :class:`~mnemo._stores.sqlite.SQLiteStore` and
:class:`~mnemo._stores.postgres.PostgresStore`, written once against primitives each store
provides: ``_rows``, ``_row``, ``_run`` and ``_run_many`` run SQL, ``_outer_transaction`` opens
the outermost write transaction, and ``_DIALECT`` says how the engine spells what differs
(:class:`~mnemo._stores.sql.Dialect`). Statements use ``?`` placeholders, which the PostgreSQL
store turns into psycopg's ``%s`` (:func:`~mnemo._stores.sql.pyformat`), and only SQL both
engines accept: ``INSERT … ON CONFLICT … DO UPDATE``, ``RETURNING``, ``substr``, ``IN (?, …)``,
``true``. The methods are part of the Store port (``base.Store`` and ``base.AuxStore``); writes
happen inside the store's ``transaction()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from .._base.models import Memory
from .base import Filters
from .rows import MEMORY_COLUMNS, SOURCE_COLUMNS, row_to_memory, source_row
from .sql import Dialect, filter_clause, marks

_SOURCES = ",".join(SOURCE_COLUMNS)


def _all_of(*conds: tuple[str, Any]) -> tuple[str, list[Any]]:
    """``cond AND cond …`` over the conditions whose value is given (not None or empty), and
    their bindings; a condition with several placeholders takes a tuple of values."""
    sql: list[str] = []
    args: list[Any] = []
    for cond, value in conds:
        if value:
            sql.append(cond)
            args.extend(value if isinstance(value, tuple) else (value,))
    return " AND ".join(sql) or "true", args


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class SharedStore:
    """Transactions, filtered reads, history, sources, injections, session state, usage and
    jobs over the store's primitives."""

    #: how the engine spells what differs (set by each store)
    _DIALECT: Dialect
    #: how many ``transaction()`` blocks are open (0: none; the outermost one is the real one)
    _txn_depth: int
    #: what leads the key of the per-owner tables (session state, usage) before their own
    #: columns: nothing on SQLite (one user); ``owner, `` on PostgreSQL, where each role has its
    #: own rows (filled by the server, ``DEFAULT current_user``) and sees no one else's
    _OWNER_KEY: str = ""

    # the primitives, provided by each store; ``?`` placeholders
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row the statement returns."""
        raise NotImplementedError

    def _row(self, sql: str, args: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The statement's first row, or None."""
        raise NotImplementedError

    def _run(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run a write; returns how many rows it changed."""
        raise NotImplementedError

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run a write once per row of bindings."""
        raise NotImplementedError

    def _outer_transaction(self) -> AbstractContextManager[None]:
        """The outermost write transaction (the backend's own: locks, retries, commit)."""
        raise NotImplementedError

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested calls join the outer one (so a method that writes in a
        transaction can be called inside a larger one)."""
        if self._txn_depth:
            self._txn_depth += 1
            try:
                yield
            finally:
                self._txn_depth -= 1
            return
        with self._outer_transaction():
            yield

    # ------------------------------------------------------------ reads by Filters

    def list(self, filters: Filters, *, order: str = "created_at DESC", limit: int | None = None, offset: int = 0) -> list[Memory]:
        """Memories passing ``filters`` in ``order`` (a trusted column and direction), the newest
        row first among ties; a page of them with ``limit`` and ``offset``."""
        where, args = filter_clause(filters, self._DIALECT)
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} ORDER BY m.{order}, m.pk DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args += [limit, offset]
        return [row_to_memory(r) for r in self._rows(sql, args)]

    def count(self, filters: Filters) -> int:
        """How many memories pass ``filters``."""
        where, args = filter_clause(filters, self._DIALECT)
        return int(self._row(f"SELECT COUNT(*) FROM memories m WHERE {where}", args)[0])  # type: ignore[index]

    def group_count(self, column: str, filters: Filters) -> dict[str, int]:
        """Memories passing ``filters`` counted by ``column`` (type, scope, status or source),
        the largest group first."""
        assert column in ("type", "scope", "status", "source")
        where, args = filter_clause(filters, self._DIALECT)
        return {k: int(n) for k, n in self._rows(
            f"SELECT m.{column}, COUNT(*) FROM memories m WHERE {where} GROUP BY m.{column} ORDER BY COUNT(*) DESC, m.{column}", args)}

    # ------------------------------------------------------------ history

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Ids of memories (any status) that start with ``prefix``, at most ``limit``, sorted."""
        return [r[0] for r in self._rows("SELECT id FROM memories WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT ?",
                                         (len(prefix), prefix, int(limit)))]

    def events(self, memory_id: str) -> list[dict[str, Any]]:
        """A memory's history, oldest first: ``{"kind", "at", "cause", "data"}``."""
        return [{"kind": k, "at": at, "cause": c, "data": json.loads(d)}
                for k, at, c, d in self._rows("SELECT kind, at, cause, data FROM events WHERE memory_id = ? ORDER BY pk", (memory_id,))]

    def events_of_kind(self, kind: str, limit: int) -> list[dict[str, Any]]:
        """The newest events of one kind across the store: ``{"memory_id", "at", "cause", "data"}``."""
        return [{"memory_id": mid, "at": at, "cause": c, "data": json.loads(d)} for mid, at, c, d in self._rows(
            "SELECT memory_id, at, cause, data FROM events WHERE kind = ? ORDER BY pk DESC LIMIT ?", (kind, limit))]

    def recent_events(self, *, since: str, kinds: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """Events of ``kinds`` across the store at or after ``since``, newest first:
        ``{"memory_id", "kind", "at", "cause", "data"}`` (what changed lately, for a review)."""
        rows = self._rows(f"SELECT memory_id, kind, at, cause, data FROM events WHERE at >= ? AND kind IN ({marks(len(kinds))}) "
                          "ORDER BY pk DESC LIMIT ?", [since, *kinds, int(limit)])
        return [{"memory_id": mid, "kind": k, "at": at, "cause": c, "data": json.loads(d)} for mid, k, at, c, d in rows]

    def created_per_day(self, since: str) -> list[tuple[str, str, str, int]]:
        """Memories (any status) created at or after ``since``, counted per day, type and scope:
        ``(YYYY-MM-DD, type, scope, n)`` (the store's activity over time)."""
        return [(d, t, s, int(n)) for d, t, s, n in self._rows(
            "SELECT substr(created_at, 1, 10), type, scope, COUNT(*) FROM memories WHERE created_at >= ? "
            "GROUP BY substr(created_at, 1, 10), type, scope", (since,))]

    def replace_events(self, memory_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Make ``events`` (``{"kind", "at", "cause", "data"}``, oldest first) a memory's whole
        history, times included: a copied memory keeps the history it had, where ``add_event``
        would stamp the current time. Call inside ``transaction()``."""
        self._run("DELETE FROM events WHERE memory_id = ?", (memory_id,))
        self._run_many("INSERT INTO events (memory_id, kind, at, cause, data) VALUES (?, ?, ?, ?, ?)",
                       [(memory_id, e["kind"], e["at"], e["cause"], _json(e["data"])) for e in events])

    # ------------------------------------------------------------ sources (ingest)

    def get_source(self, key: str) -> dict[str, Any] | None:
        """The ingested document recorded under ``key`` (a path, URL or chat export), or None."""
        row = self._row(f"SELECT {_SOURCES} FROM sources WHERE key = ?", (key,))
        return None if row is None else source_row(row)

    def put_source(self, source: dict[str, Any]) -> None:
        """Insert or replace a source row; ``source`` has the columns of ``sources`` (``metadata`` a dict)."""
        values = {"status": "active", "title": None, "doc_time": None, "mtime": None, "size": 0, "chunks": 0, **source}
        values["metadata"] = _json(values.get("metadata") or {})
        updates = ", ".join(f"{c} = excluded.{c}" for c in SOURCE_COLUMNS if c != "key")
        self._run(f"INSERT INTO sources ({_SOURCES}) VALUES ({marks(len(SOURCE_COLUMNS))}) ON CONFLICT (key) DO UPDATE SET {updates}",
                  tuple(values[c] for c in SOURCE_COLUMNS))

    def delete_source(self, key: str) -> None:
        """Forget the source row (its memories are handled by the caller)."""
        self._run("DELETE FROM sources WHERE key = ?", (key,))

    def list_sources(self, *, kind: str | None = None, status: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]:
        """Sources, newest ingest first, optionally of one kind/status or under a key prefix."""
        where, args = _all_of(("kind = ?", kind), ("status = ?", status),
                              ("substr(key, 1, ?) = ?", prefix and (len(prefix), prefix)))
        return [source_row(r) for r in self._rows(f"SELECT {_SOURCES} FROM sources WHERE {where} ORDER BY updated_at DESC, key", args)]

    def sources_by_hash(self, content_hash: str) -> list[dict[str, Any]]:
        """Sources whose document has this content hash (rename detection)."""
        return [source_row(r) for r in self._rows(f"SELECT {_SOURCES} FROM sources WHERE content_hash = ? ORDER BY key", (content_hash,))]

    def rename_source(self, old_key: str, new_key: str, metadata: dict[str, Any] | None = None) -> int:
        """Move a source and its memories (every status) from ``old_key`` to ``new_key``, optionally
        replacing the source's metadata; returns the number of memories moved (a rename: nothing
        is re-embedded)."""
        self._run("UPDATE sources SET key = ? WHERE key = ?", (new_key, old_key))
        if metadata is not None:
            self._run("UPDATE sources SET metadata = ? WHERE key = ?", (_json(metadata), new_key))
        return self._run("UPDATE memories SET source = ? WHERE source = ?", (new_key, old_key))

    def memories_by_source(self, source: str, statuses: Sequence[str] | None = ("active",)) -> list[Memory]:
        """Memories whose ``source`` column is exactly ``source`` (a document's chunks), in insert order."""
        sql = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE source = ?"
        if statuses:
            sql += f" AND status IN ({marks(len(statuses))})"
        return [row_to_memory(r) for r in self._rows(sql + " ORDER BY pk", [source, *(statuses or ())])]

    def sequence_positions(self, pks: Sequence[int]) -> dict[int, tuple[str, str | None, int]]:
        """``pk -> (source, source_session, chunk)`` for those of ``pks`` that are a numbered part
        of a document or conversation (metadata ``chunk``); the others are left out."""
        if not pks:
            return {}
        chunk = self._DIALECT.chunk_of.format(t="")
        cond, args = self._DIALECT.member("pk", list(pks))
        out: dict[int, tuple[str, str | None, int]] = {}
        for pk, source, session, place in self._rows(f"SELECT pk, source, source_session, {chunk} FROM memories WHERE {cond} AND {chunk} IS NOT NULL", args):
            try:
                out[int(pk)] = (source, session, int(place))
            except (TypeError, ValueError):
                continue  # a chunk that is not a whole number (an imported record's own metadata) has no place
        return out

    def sequence_members(self, source: str, session: str | None, chunks: Sequence[int], filters: Filters) -> dict[int, int]:
        """``pk -> chunk`` of the memories of ``source`` (and ``session``) at the places
        ``chunks`` that pass ``filters`` (one index lookup per place: ``memories_chunk``)."""
        if not chunks:
            return {}
        chunk = self._DIALECT.chunk_of.format(t="m.")
        places, args = self._DIALECT.member(chunk, [self._DIALECT.chunk_value(c) for c in chunks])
        where, f_args = filter_clause(filters, self._DIALECT)
        same = "m.source_session IS NULL" if session is None else "m.source_session = ?"
        rows = self._rows(f"SELECT m.pk, {chunk} FROM memories m WHERE m.source = ? AND {places} AND {same} AND {where}",
                          [source, *args, *([] if session is None else [session]), *f_args])
        return {int(pk): int(place) for pk, place in rows}

    # ------------------------------------------------------------ injection log

    def log_injection(self, *, at: str, session: str | None, surface: str, query: str | None,
                      memory_ids: Sequence[str], data: dict[str, Any] | None = None) -> int:
        """Record what was put into an assistant's context; returns the log row's number."""
        row = self._row("INSERT INTO injections (at, session, surface, query, memory_ids, data) VALUES (?,?,?,?,?,?) RETURNING pk",
                        (at, session, surface, query, json.dumps(list(memory_ids)), _json(data or {})))
        return int(row[0])  # type: ignore[index]

    def injections(self, *, session: str | None = None, since: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The injection log, newest first."""
        where, args = _all_of(("session = ?", session), ("at >= ?", since))
        rows = self._rows(f"SELECT pk, at, session, surface, query, memory_ids, data FROM injections WHERE {where} "
                          "ORDER BY pk DESC LIMIT ?", [*args, int(limit)])
        return [{"id": int(pk), "at": at, "session": s, "surface": surf, "query": q, "memory_ids": json.loads(ids),
                 "data": json.loads(data)} for pk, at, s, surf, q, ids, data in rows]

    def injections_per_day(self, since: str) -> dict[str, int]:
        """How many context injections were logged per day (``YYYY-MM-DD``) at or after ``since``."""
        return {d: int(n) for d, n in self._rows(
            "SELECT substr(at, 1, 10), COUNT(*) FROM injections WHERE at >= ? GROUP BY substr(at, 1, 10)", (since,))}

    # ------------------------------------------------------------ sync (mnemo sync)

    def memories_to_sync(self, after_pk: int, limit: int) -> list[tuple[int, int, Memory]]:
        """Memories (any status) whose state differs from the version sync last recorded for
        them (none yet, or a ``seq`` that moved since; -1, purged, never), in pk order after
        ``after_pk``: ``(pk, seq, memory)``. Compared row by row, not by a seq cursor: a seq is
        not monotonic across purges on SQLite (MAX(seq) + 1 can come back)."""
        cols = ", ".join(f"m.{c.strip()}" for c in MEMORY_COLUMNS.split(","))
        return [(int(r[0]), int(r[1]), row_to_memory(r[2:])) for r in self._rows(
            f"SELECT m.pk, m.seq, {cols} FROM memories m LEFT JOIN sync_versions v ON v.memory_id = m.id "
            "WHERE m.pk > ? AND (v.memory_id IS NULL OR (v.seq <> m.seq AND v.seq <> -1)) ORDER BY m.pk LIMIT ?", (after_pk, int(limit)))]

    def events_after(self, after_pk: int, kinds: Sequence[str], limit: int) -> list[tuple[int, str, str, str]]:
        """Events of ``kinds`` after the event ``after_pk``, oldest first: ``(pk, memory_id, kind, at)``."""
        return [(int(pk), mid, k, at) for pk, mid, k, at in self._rows(
            f"SELECT pk, memory_id, kind, at FROM events WHERE pk > ? AND kind IN ({marks(len(kinds))}) ORDER BY pk LIMIT ?",
            [after_pk, *kinds, int(limit)])]

    def memories_after_pk(self, after_pk: int, limit: int) -> list[tuple[int, Memory]]:
        """Memories (any status) in pk order after ``after_pk``: ``(pk, memory)``."""
        return [(int(r[0]), row_to_memory(r[1:])) for r in self._rows(
            f"SELECT pk, {MEMORY_COLUMNS} FROM memories WHERE pk > ? ORDER BY pk LIMIT ?", (after_pk, int(limit)))]

    def memory_seq(self, memory_id: str) -> int:
        """A memory's ``seq`` (0 when it is not in the store)."""
        row = self._row("SELECT seq FROM memories WHERE id = ?", (memory_id,))
        return 0 if row is None else int(row[0])

    def vectors_filled(self, hashes: Sequence[str]) -> int:
        """Give the memories embedded as ``hashes`` a new ``seq`` (their vectors were just filled
        in after the text: a bulk import's background work), so every process's in-memory vector
        index, which reads rows changed since the seq it has, picks the vectors up. One statement
        per row: SQLite's next seq is computed per statement and ``seq`` is unique."""
        if not hashes:
            return 0
        cond, args = self._DIALECT.member("embed_hash", list(hashes))
        pks = [int(r[0]) for r in self._rows(f"SELECT pk FROM memories WHERE {cond}", args)]
        self._run_many(f"UPDATE memories SET seq = {self._DIALECT.next_seq} WHERE pk = ?", [(pk,) for pk in pks])
        return len(pks)

    def embed_hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """``memory id → the hash its vector is stored under``."""
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            out.update({mid: h for mid, h in self._rows(f"SELECT id, embed_hash FROM memories WHERE id IN ({marks(len(part))})", part)})
        return out

    def sync_value(self, key: str) -> str | None:
        row = self._row("SELECT value FROM sync_state WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set_sync_value(self, key: str, value: str) -> None:
        self._run(f"INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT ({self._OWNER_KEY}key) DO UPDATE SET value = excluded.value",
                  (key, value))

    def sync_versions(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None, str, int]]:
        """``memory id → (version, base, origin, seq)`` of the memories that have one."""
        out: dict[str, tuple[str, str | None, str, int]] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start:start + 500])
            out.update({mid: (hlc, base, origin, int(seq)) for mid, hlc, base, origin, seq in self._rows(
                f"SELECT memory_id, hlc, base, origin, seq FROM sync_versions WHERE memory_id IN ({marks(len(part))})", part)})
        return out

    def set_sync_version(self, memory_id: str, hlc: str, base: str | None, origin: str, seq: int) -> None:
        self._run("INSERT INTO sync_versions (memory_id, hlc, base, origin, seq) VALUES (?,?,?,?,?) "
                  f"ON CONFLICT ({self._OWNER_KEY}memory_id) DO UPDATE SET hlc = excluded.hlc, base = excluded.base, "
                  "origin = excluded.origin, seq = excluded.seq", (memory_id, hlc, base, origin, seq))

    def sync_applied(self) -> dict[tuple[str, int], str]:
        """The other devices' segments applied here: ``(device, number) → sha256``."""
        return {(d, int(n)): sha for d, n, sha in self._rows("SELECT device, segment, sha256 FROM sync_applied")}

    def mark_sync_applied(self, device: str, segment: int, sha256: str, at: str) -> None:
        self._run(f"INSERT INTO sync_applied (device, segment, sha256, at) VALUES (?,?,?,?) ON CONFLICT ({self._OWNER_KEY}device, segment) "
                  "DO NOTHING", (device, segment, sha256, at))

    # ------------------------------------------------------------ per-session state

    def get_session_value(self, session: str, key: str) -> Any:
        """A JSON value stored for an assistant session, or None."""
        row = self._row("SELECT value FROM session_state WHERE session = ? AND key = ?", (session, key))
        return None if row is None else json.loads(row[0])

    def set_session_value(self, session: str, key: str, value: Any, at: str) -> None:
        """Store a JSON value for an assistant session (None deletes it)."""
        if value is None:
            self._run("DELETE FROM session_state WHERE session = ? AND key = ?", (session, key))
            return
        self._run("INSERT INTO session_state (session, key, value, updated_at) VALUES (?,?,?,?) "
                  f"ON CONFLICT ({self._OWNER_KEY}session, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                  (session, key, _json(value), at))

    def prune_sessions(self, before: str) -> int:
        """Drop session state not updated since ``before``; returns the rows removed."""
        return self._run("DELETE FROM session_state WHERE updated_at < ?", (before,))

    # ------------------------------------------------------------ LLM usage

    def add_usage(self, day: str, kind: str, *, calls: int = 0, tokens: int = 0) -> None:
        """Count ``calls`` and ``tokens`` spent on ``day`` (YYYY-MM-DD) for ``kind``."""
        self._run(f"INSERT INTO usage (day, kind, calls, tokens) VALUES (?,?,?,?) ON CONFLICT ({self._OWNER_KEY}day, kind) DO UPDATE "
                  "SET calls = usage.calls + excluded.calls, tokens = usage.tokens + excluded.tokens",
                  (day, kind, int(calls), int(tokens)))

    def usage(self, day: str | None = None) -> dict[str, dict[str, int]]:
        """``{kind: {"calls": n, "tokens": n}}`` for one day, or summed over all days."""
        if day:
            rows = self._rows("SELECT kind, calls, tokens FROM usage WHERE day = ?", (day,))
        else:
            rows = self._rows("SELECT kind, SUM(calls), SUM(tokens) FROM usage GROUP BY kind")
        return {k: {"calls": int(c), "tokens": int(t)} for k, c, t in rows}

    # ------------------------------------------------------------ background jobs

    def claim_job(self, key: str, owner: str, *, at: str, stale_before: str) -> bool:
        """Take the job ``key`` for ``owner`` unless another owner holds it and updated it at or
        after ``stale_before``. Call inside ``transaction()`` so two processes cannot both win."""
        row = self._row(f"SELECT state, owner, updated_at FROM jobs WHERE key = ?{self._DIALECT.lock_row}", (key,))
        if row is not None and row[0] == "running" and row[1] != owner and row[2] >= stale_before:
            return False
        if row is None:
            self._run("INSERT INTO jobs (key, state, owner, progress, updated_at) VALUES (?, 'running', ?, '{}', ?)", (key, owner, at))
        else:  # a finished, failed or abandoned run: take it over, keeping its progress
            self._run("UPDATE jobs SET state = 'running', owner = ?, updated_at = ? WHERE key = ?", (owner, at, key))
        return True

    def update_job(self, key: str, *, state: str, at: str, progress: dict[str, Any] | None = None) -> None:
        """Set a job's state ('running', 'done', 'failed') and, if given, its progress."""
        if progress is None:
            self._run("UPDATE jobs SET state = ?, updated_at = ? WHERE key = ?", (state, at, key))
        else:
            self._run("UPDATE jobs SET state = ?, updated_at = ?, progress = ? WHERE key = ?", (state, at, _json(progress), key))

    def get_job(self, key: str) -> dict[str, Any] | None:
        """A job's row: key, state, owner, progress (dict), updated_at."""
        row = self._row("SELECT key, state, owner, progress, updated_at FROM jobs WHERE key = ?", (key,))
        if row is None:
            return None
        return {"key": row[0], "state": row[1], "owner": row[2], "progress": json.loads(row[3]), "updated_at": row[4]}
