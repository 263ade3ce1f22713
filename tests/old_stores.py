"""Store files as an older mnemo left them, for the migration, encryption and purge tests."""

from __future__ import annotations

from pathlib import Path


def v1_store(path: Path, content: str, *, memory_id: str = "mem_v1", created_at: str = "2026-01-01T00:00:00Z",
             updated_at: str = "2026-01-01T00:00:00Z", event: bool = False) -> None:
    """A store exactly as schema version 1 left it, holding one memory ``content`` (and its
    'created' event when ``event``). The first open migrates it, with a backup of the file."""
    import apsw

    from mnemo._stores.sqlite_schema import MIGRATIONS

    conn = apsw.Connection(str(path))
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    conn.execute(MIGRATIONS[0][2])
    conn.execute("INSERT INTO schema_migrations VALUES (1, 'v1', '2026-01-01T00:00:00Z')")
    conn.execute("PRAGMA user_version=1")
    conn.execute("INSERT INTO memories (id, content, type, scope, created_at, updated_at, content_hash, embed_hash, seq) "
                 "VALUES (?, ?, 'note', 'global', ?, ?, 'h', 'e', 1)", (memory_id, content, created_at, updated_at))
    if event:
        conn.execute("INSERT INTO events (memory_id, kind, at, cause) VALUES (?, 'created', ?, 'import')", (memory_id, updated_at))
    conn.execute("COMMIT")
    conn.close()
