"""SQLite side of the auxiliary tables (migration 3): ingested sources, the injection log,
per-session state, LLM usage and background jobs.

A mixin of :class:`~mnemo._sqlite.SQLiteStore`: it uses the store's connection and its
``transaction()``; the methods here are part of the Store port (``_store.AuxStore``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base.models import Memory

_SOURCE_COLUMNS = ("key", "kind", "content_hash", "title", "doc_time", "size", "mtime", "chunks", "scope",
                   "status", "ingested_at", "updated_at", "metadata")


def _source_row(row: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(_SOURCE_COLUMNS, row))
    d["metadata"] = json.loads(d["metadata"] or "{}")
    return d


class AuxTables:
    """Sources, injections, session state, usage and jobs over ``self.conn``."""

    conn: Any

    # ------------------------------------------------------------ sources (ingest)

    def get_source(self, key: str) -> dict[str, Any] | None:
        """The ingested document recorded under ``key`` (a path, URL or chat export), or None."""
        row = self.conn.execute(f"SELECT {','.join(_SOURCE_COLUMNS)} FROM sources WHERE key = ?", (key,)).fetchone()
        return None if row is None else _source_row(row)

    def put_source(self, source: dict[str, Any]) -> None:
        """Insert or replace a source row; ``source`` has the columns of ``sources`` (``metadata`` a dict)."""
        values = dict(source)
        values.setdefault("status", "active")
        values.setdefault("metadata", {})
        values["metadata"] = json.dumps(values["metadata"], ensure_ascii=False)
        for col in ("title", "doc_time", "mtime"):
            values.setdefault(col, None)
        values.setdefault("size", 0)
        values.setdefault("chunks", 0)
        cols = ",".join(_SOURCE_COLUMNS)
        self.conn.execute(f"INSERT OR REPLACE INTO sources ({cols}) VALUES ({','.join('?' * len(_SOURCE_COLUMNS))})",
                          tuple(values[c] for c in _SOURCE_COLUMNS))

    def delete_source(self, key: str) -> None:
        """Forget the source row (its memories are handled by the caller)."""
        self.conn.execute("DELETE FROM sources WHERE key = ?", (key,))

    def list_sources(self, *, kind: str | None = None, status: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]:
        """Sources, newest ingest first, optionally of one kind/status or under a key prefix."""
        conds, args = [], []
        if kind:
            conds.append("kind = ?")
            args.append(kind)
        if status:
            conds.append("status = ?")
            args.append(status)
        if prefix:
            conds.append("substr(key, 1, ?) = ?")
            args.extend([len(prefix), prefix])
        where = " AND ".join(conds) or "1"
        rows = self.conn.execute(f"SELECT {','.join(_SOURCE_COLUMNS)} FROM sources WHERE {where} ORDER BY updated_at DESC, key", args)
        return [_source_row(r) for r in rows]

    def sources_by_hash(self, content_hash: str) -> list[dict[str, Any]]:
        """Sources whose document has this content hash (rename detection)."""
        rows = self.conn.execute(f"SELECT {','.join(_SOURCE_COLUMNS)} FROM sources WHERE content_hash = ?", (content_hash,))
        return [_source_row(r) for r in rows]

    def rename_source(self, old_key: str, new_key: str, metadata: dict[str, Any] | None = None) -> int:
        """Move a source and its memories (every status) from ``old_key`` to ``new_key``, optionally
        replacing the source's metadata; returns the number of memories moved (a rename: nothing
        is re-embedded)."""
        self.conn.execute("UPDATE sources SET key = ? WHERE key = ?", (new_key, old_key))
        if metadata is not None:
            self.conn.execute("UPDATE sources SET metadata = ? WHERE key = ?", (json.dumps(metadata, ensure_ascii=False), new_key))
        self.conn.execute("UPDATE memories SET source = ? WHERE source = ?", (new_key, old_key))
        return int(self.conn.changes())

    def memories_by_source(self, source: str, statuses: Sequence[str] | None = ("active",)) -> list[Memory]:
        """Memories whose ``source`` column is exactly ``source`` (a document's chunks), in insert order."""
        from .sqlite import _COLUMNS, _row_to_memory  # local: _sqlite imports this module

        sql = f"SELECT {_COLUMNS} FROM memories WHERE source = ?"
        args: list[Any] = [source]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args.extend(statuses)
        return [_row_to_memory(r) for r in self.conn.execute(sql + " ORDER BY pk", args)]

    # ------------------------------------------------------------ injection log

    def log_injection(self, *, at: str, session: str | None, surface: str, query: str | None,
                      memory_ids: Sequence[str], data: dict[str, Any] | None = None) -> int:
        """Record what was put into an assistant's context; returns the log row's number."""
        self.conn.execute(
            "INSERT INTO injections (at, session, surface, query, memory_ids, data) VALUES (?,?,?,?,?,?)",
            (at, session, surface, query, json.dumps(list(memory_ids)), json.dumps(data or {}, ensure_ascii=False)))
        return int(self.conn.last_insert_rowid())

    def injections(self, *, session: str | None = None, since: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The injection log, newest first."""
        conds, args = [], []
        if session:
            conds.append("session = ?")
            args.append(session)
        if since:
            conds.append("at >= ?")
            args.append(since)
        where = " AND ".join(conds) or "1"
        rows = self.conn.execute(
            f"SELECT pk, at, session, surface, query, memory_ids, data FROM injections WHERE {where} ORDER BY pk DESC LIMIT ?",
            [*args, int(limit)])
        return [{"id": pk, "at": at, "session": s, "surface": surf, "query": q, "memory_ids": json.loads(ids),
                 "data": json.loads(data)} for pk, at, s, surf, q, ids, data in rows]

    # ------------------------------------------------------------ per-session state

    def get_session_value(self, session: str, key: str) -> Any:
        """A JSON value stored for an assistant session, or None."""
        row = self.conn.execute("SELECT value FROM session_state WHERE session = ? AND key = ?", (session, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_session_value(self, session: str, key: str, value: Any, at: str) -> None:
        """Store a JSON value for an assistant session (None deletes it)."""
        if value is None:
            self.conn.execute("DELETE FROM session_state WHERE session = ? AND key = ?", (session, key))
            return
        self.conn.execute("INSERT OR REPLACE INTO session_state (session, key, value, updated_at) VALUES (?,?,?,?)",
                          (session, key, json.dumps(value, ensure_ascii=False), at))

    def prune_sessions(self, before: str) -> int:
        """Drop session state not updated since ``before``; returns the rows removed."""
        self.conn.execute("DELETE FROM session_state WHERE updated_at < ?", (before,))
        return int(self.conn.changes())

    # ------------------------------------------------------------ LLM usage

    def add_usage(self, day: str, kind: str, *, calls: int = 0, tokens: int = 0) -> None:
        """Count ``calls`` and ``tokens`` spent on ``day`` (YYYY-MM-DD) for ``kind``."""
        self.conn.execute(
            "INSERT INTO usage (day, kind, calls, tokens) VALUES (?,?,?,?) "
            "ON CONFLICT (day, kind) DO UPDATE SET calls = calls + excluded.calls, tokens = tokens + excluded.tokens",
            (day, kind, int(calls), int(tokens)))

    def usage(self, day: str | None = None) -> dict[str, dict[str, int]]:
        """``{kind: {"calls": n, "tokens": n}}`` for one day, or summed over all days."""
        if day:
            rows = self.conn.execute("SELECT kind, calls, tokens FROM usage WHERE day = ?", (day,))
        else:
            rows = self.conn.execute("SELECT kind, SUM(calls), SUM(tokens) FROM usage GROUP BY kind")
        return {k: {"calls": int(c), "tokens": int(t)} for k, c, t in rows}

    # ------------------------------------------------------------ background jobs

    def claim_job(self, key: str, owner: str, *, at: str, stale_before: str) -> bool:
        """Take the job ``key`` for ``owner`` unless another owner holds it and updated it at or
        after ``stale_before``. Call inside ``transaction()`` so two processes cannot both win."""
        row = self.conn.execute("SELECT state, owner, updated_at FROM jobs WHERE key = ?", (key,)).fetchone()
        if row is not None and row[0] == "running" and row[1] != owner and row[2] >= stale_before:
            return False
        if row is None:
            self.conn.execute("INSERT INTO jobs (key, state, owner, progress, updated_at) VALUES (?, 'running', ?, '{}', ?)",
                              (key, owner, at))
        else:  # a finished, failed or abandoned run: take it over, keeping its progress
            self.conn.execute("UPDATE jobs SET state = 'running', owner = ?, updated_at = ? WHERE key = ?", (owner, at, key))
        return True

    def update_job(self, key: str, *, state: str, at: str, progress: dict[str, Any] | None = None) -> None:
        """Set a job's state ('running', 'done', 'failed') and, if given, its progress."""
        if progress is None:
            self.conn.execute("UPDATE jobs SET state = ?, updated_at = ? WHERE key = ?", (state, at, key))
        else:
            self.conn.execute("UPDATE jobs SET state = ?, updated_at = ?, progress = ? WHERE key = ?",
                              (state, at, json.dumps(progress, ensure_ascii=False), key))

    def get_job(self, key: str) -> dict[str, Any] | None:
        """A job's row: key, state, owner, progress (dict), updated_at."""
        row = self.conn.execute("SELECT key, state, owner, progress, updated_at FROM jobs WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return {"key": row[0], "state": row[1], "owner": row[2], "progress": json.loads(row[3]), "updated_at": row[4]}
