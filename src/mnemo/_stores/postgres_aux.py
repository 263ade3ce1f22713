"""PostgreSQL side of the auxiliary tables (migration 3): ingested sources, the injection log,
per-session state, LLM usage and background jobs — the same methods and semantics as
``_sqlite_aux.AuxTables`` (the Store port's ``AuxStore``), over ``self._execute`` — and the
team methods (private scopes, the acting role).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base.models import Memory

_SOURCE_COLUMNS = ("key", "kind", "content_hash", "title", "doc_time", "size", "mtime", "chunks", "scope",
                   "status", "ingested_at", "updated_at", "metadata")
_SRC = ",".join(_SOURCE_COLUMNS)


def _source_row(row: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(_SOURCE_COLUMNS, row))
    d["metadata"] = json.loads(d["metadata"] or "{}")
    return d


class PgAuxTables:
    """Sources, injections, session state, usage and jobs for :class:`~mnemo._postgres.PostgresStore`."""

    def _execute(self, sql: str, args: Any = None) -> Any: ...  # provided by the store
    def _q(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]: ...
    def _one(self, sql: str, args: Any = None) -> tuple[Any, ...] | None: ...

    # ------------------------------------------------------------ sources (ingest)

    def get_source(self, key: str) -> dict[str, Any] | None:
        """The ingested document recorded under ``key`` (a path, URL or chat export), or None."""
        row = self._one(f"SELECT {_SRC} FROM sources WHERE key = %s", (key,))
        return None if row is None else _source_row(row)

    def put_source(self, source: dict[str, Any]) -> None:
        """Insert or replace a source row; ``source`` has the columns of ``sources`` (``metadata`` a dict)."""
        values = dict(source)
        values.setdefault("status", "active")
        values["metadata"] = json.dumps(values.get("metadata") or {}, ensure_ascii=False)
        for col in ("title", "doc_time", "mtime"):
            values.setdefault(col, None)
        values.setdefault("size", 0)
        values.setdefault("chunks", 0)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _SOURCE_COLUMNS if c != "key")
        self._execute(f"INSERT INTO sources ({_SRC}) VALUES ({','.join(['%s'] * len(_SOURCE_COLUMNS))}) "
                      f"ON CONFLICT (key) DO UPDATE SET {updates}", tuple(values[c] for c in _SOURCE_COLUMNS))

    def delete_source(self, key: str) -> None:
        """Forget the source row (its memories are handled by the caller)."""
        self._execute("DELETE FROM sources WHERE key = %s", (key,))

    def list_sources(self, *, kind: str | None = None, status: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]:
        """Sources, newest ingest first, optionally of one kind/status or under a key prefix."""
        conds, args = [], []
        if kind:
            conds.append("kind = %s")
            args.append(kind)
        if status:
            conds.append("status = %s")
            args.append(status)
        if prefix:
            conds.append("left(key, %s) = %s")
            args.extend([len(prefix), prefix])
        where = " AND ".join(conds) or "true"
        return [_source_row(r) for r in self._q(f"SELECT {_SRC} FROM sources WHERE {where} ORDER BY updated_at DESC, key", args)]

    def sources_by_hash(self, content_hash: str) -> list[dict[str, Any]]:
        """Sources whose document has this content hash (rename detection)."""
        return [_source_row(r) for r in self._q(f"SELECT {_SRC} FROM sources WHERE content_hash = %s ORDER BY key", (content_hash,))]

    def rename_source(self, old_key: str, new_key: str, metadata: dict[str, Any] | None = None) -> int:
        """Move a source and its memories (every status) from ``old_key`` to ``new_key``, optionally
        replacing the source's metadata; returns the number of memories moved."""
        self._execute("UPDATE sources SET key = %s WHERE key = %s", (new_key, old_key))
        if metadata is not None:
            self._execute("UPDATE sources SET metadata = %s WHERE key = %s", (json.dumps(metadata, ensure_ascii=False), new_key))
        return int(self._execute("UPDATE memories SET source = %s WHERE source = %s", (new_key, old_key)).rowcount)

    def memories_by_source(self, source: str, statuses: Sequence[str] | None = ("active",)) -> list[Memory]:
        """Memories whose ``source`` column is exactly ``source`` (a document's chunks), in insert order."""
        from .postgres import _COLUMNS, _row_to_memory  # local: _postgres imports this module

        sql = f"SELECT {_COLUMNS} FROM memories WHERE source = %s"
        args: list[Any] = [source]
        if statuses:
            sql += " AND status = ANY(%s)"
            args.append(list(statuses))
        return [_row_to_memory(r) for r in self._q(sql + " ORDER BY pk", args)]

    # ------------------------------------------------------------ injection log

    def log_injection(self, *, at: str, session: str | None, surface: str, query: str | None,
                      memory_ids: Sequence[str], data: dict[str, Any] | None = None) -> int:
        """Record what was put into an assistant's context; returns the log row's number."""
        row = self._one("INSERT INTO injections (at, session, surface, query, memory_ids, data) VALUES (%s,%s,%s,%s,%s,%s) RETURNING pk",
                        (at, session, surface, query, json.dumps(list(memory_ids)), json.dumps(data or {}, ensure_ascii=False)))
        return int(row[0])  # type: ignore[index]

    def injections(self, *, session: str | None = None, since: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The injection log, newest first."""
        conds, args = [], []
        if session:
            conds.append("session = %s")
            args.append(session)
        if since:
            conds.append("at >= %s")
            args.append(since)
        where = " AND ".join(conds) or "true"
        rows = self._q(f"SELECT pk, at, session, surface, query, memory_ids, data FROM injections WHERE {where} ORDER BY pk DESC LIMIT %s",
                       [*args, int(limit)])
        return [{"id": int(pk), "at": at, "session": s, "surface": surf, "query": q, "memory_ids": json.loads(ids),
                 "data": json.loads(data)} for pk, at, s, surf, q, ids, data in rows]

    # ------------------------------------------------------------ per-session state

    def get_session_value(self, session: str, key: str) -> Any:
        """A JSON value stored for an assistant session, or None."""
        row = self._one("SELECT value FROM session_state WHERE session = %s AND key = %s", (session, key))
        return None if row is None else json.loads(row[0])

    def set_session_value(self, session: str, key: str, value: Any, at: str) -> None:
        """Store a JSON value for an assistant session (None deletes it)."""
        if value is None:
            self._execute("DELETE FROM session_state WHERE session = %s AND key = %s", (session, key))
            return
        self._execute("INSERT INTO session_state (session, key, value, updated_at) VALUES (%s,%s,%s,%s) "
                      "ON CONFLICT (session, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                      (session, key, json.dumps(value, ensure_ascii=False), at))

    def prune_sessions(self, before: str) -> int:
        """Drop session state not updated since ``before``; returns the rows removed."""
        return int(self._execute("DELETE FROM session_state WHERE updated_at < %s", (before,)).rowcount)

    # ------------------------------------------------------------ LLM usage

    def add_usage(self, day: str, kind: str, *, calls: int = 0, tokens: int = 0) -> None:
        """Count ``calls`` and ``tokens`` spent on ``day`` (YYYY-MM-DD) for ``kind``."""
        self._execute("INSERT INTO usage (day, kind, calls, tokens) VALUES (%s,%s,%s,%s) ON CONFLICT (day, kind) DO UPDATE "
                      "SET calls = usage.calls + excluded.calls, tokens = usage.tokens + excluded.tokens",
                      (day, kind, int(calls), int(tokens)))

    def usage(self, day: str | None = None) -> dict[str, dict[str, int]]:
        """``{kind: {"calls": n, "tokens": n}}`` for one day, or summed over all days."""
        if day:
            rows = self._q("SELECT kind, calls, tokens FROM usage WHERE day = %s", (day,))
        else:
            rows = self._q("SELECT kind, SUM(calls), SUM(tokens) FROM usage GROUP BY kind")
        return {k: {"calls": int(c), "tokens": int(t)} for k, c, t in rows}

    # ------------------------------------------------------------ background jobs

    def claim_job(self, key: str, owner: str, *, at: str, stale_before: str) -> bool:
        """Take the job ``key`` for ``owner`` unless another owner holds it and updated it at or
        after ``stale_before``. Call inside ``transaction()`` (the write lock makes it atomic)."""
        row = self._one("SELECT state, owner, updated_at FROM jobs WHERE key = %s FOR UPDATE", (key,))
        if row is not None and row[0] == "running" and row[1] != owner and row[2] >= stale_before:
            return False
        if row is not None:
            self._execute("UPDATE jobs SET state = 'running', owner = %s, updated_at = %s WHERE key = %s", (owner, at, key))
        else:
            self._execute("INSERT INTO jobs (key, state, owner, progress, updated_at) VALUES (%s, 'running', %s, '{}', %s)", (key, owner, at))
        return True

    def update_job(self, key: str, *, state: str, at: str, progress: dict[str, Any] | None = None) -> None:
        """Set a job's state ('running', 'done', 'failed') and, if given, its progress."""
        if progress is None:
            self._execute("UPDATE jobs SET state = %s, updated_at = %s WHERE key = %s", (state, at, key))
        else:
            self._execute("UPDATE jobs SET state = %s, updated_at = %s, progress = %s WHERE key = %s",
                          (state, at, json.dumps(progress, ensure_ascii=False), key))

    def get_job(self, key: str) -> dict[str, Any] | None:
        """A job's row: key, state, owner, progress (dict), updated_at."""
        row = self._one("SELECT key, state, owner, progress, updated_at FROM jobs WHERE key = %s", (key,))
        if row is None:
            return None
        return {"key": row[0], "state": row[1], "owner": row[2], "progress": json.loads(row[3]), "updated_at": row[4]}

    # ------------------------------------------------------------ team

    def set_private_scope(self, scope: str, private: bool) -> None:
        """Make this role's future memories in ``scope`` private (or shared again); with
        ``private``, its existing memories there become private too."""
        if private:
            self._execute("INSERT INTO private_scopes (scope) VALUES (%s) ON CONFLICT DO NOTHING", (scope,))
            self._execute("UPDATE memories SET visibility = 'private' WHERE scope = %s AND owner = current_user", (scope,))
            self._execute("UPDATE memory_terms t SET visibility = 'private' FROM memories m WHERE m.pk = t.pk "
                          "AND m.scope = %s AND m.owner = current_user", (scope,))
            self._execute("UPDATE events e SET mem_visibility = 'private' FROM memories m WHERE m.id = e.memory_id "
                          "AND m.scope = %s AND m.owner = current_user", (scope,))
        else:
            self._execute("DELETE FROM private_scopes WHERE scope = %s", (scope,))
            self._execute("UPDATE memories SET visibility = 'shared' WHERE scope = %s AND owner = current_user", (scope,))
            self._execute("UPDATE memory_terms t SET visibility = 'shared' FROM memories m WHERE m.pk = t.pk "
                          "AND m.scope = %s AND m.owner = current_user", (scope,))
            self._execute("UPDATE events e SET mem_visibility = 'shared' FROM memories m WHERE m.id = e.memory_id "
                          "AND m.scope = %s AND m.owner = current_user", (scope,))

    def private_scopes(self) -> list[str]:
        """The scopes this role keeps private."""
        return [r[0] for r in self._q("SELECT scope FROM private_scopes ORDER BY scope")]

    def whoami(self) -> str:
        """The database role this store acts as (the owner of what it writes)."""
        return str(self._one("SELECT current_user")[0])  # type: ignore[index]
