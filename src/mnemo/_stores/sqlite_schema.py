"""Numbered schema migrations for the SQLite store.

Migrations only grow: a shipped one is never edited. Each runs inside one transaction together
with its record in ``schema_migrations`` and the ``user_version`` bump, so a store is always at
exactly one version. The core issue owns version 1; later features add new numbers.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "memories, events, relations, embeddings, full-text index",
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE memories (
            pk               INTEGER PRIMARY KEY,
            id               TEXT NOT NULL UNIQUE,
            content          TEXT NOT NULL,
            type             TEXT NOT NULL,
            scope            TEXT NOT NULL,
            tags             TEXT NOT NULL DEFAULT '[]',
            importance       REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
            confidence       REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
            source           TEXT NOT NULL DEFAULT 'manual',
            source_session   TEXT,
            created_at       TEXT NOT NULL,
            updated_at       TEXT NOT NULL,
            last_accessed_at TEXT,
            access_count     INTEGER NOT NULL DEFAULT 0,
            status           TEXT NOT NULL DEFAULT 'active'
                             CHECK (status IN ('active', 'superseded', 'archived', 'deleted')),
            superseded_by    TEXT,
            expires_at       TEXT,
            content_hash     TEXT NOT NULL,
            embed_hash       TEXT NOT NULL,
            metadata         TEXT NOT NULL DEFAULT '{}',
            seq              INTEGER NOT NULL
        );
        CREATE INDEX memories_scope_status_created ON memories (scope, status, created_at);
        CREATE INDEX memories_status_created ON memories (status, created_at);
        CREATE INDEX memories_hash ON memories (content_hash, scope);
        CREATE UNIQUE INDEX memories_seq ON memories (seq);

        -- append-only history of every change (DESIGN.md)
        CREATE TABLE events (
            pk        INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            kind      TEXT NOT NULL,
            at        TEXT NOT NULL,
            cause     TEXT,
            data      TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX events_memory ON events (memory_id, pk);

        CREATE TABLE relations (
            src        TEXT NOT NULL,
            dst        TEXT NOT NULL,
            kind       TEXT NOT NULL CHECK (kind IN ('related', 'supersedes', 'derived_from', 'cause_effect')),
            strength   REAL NOT NULL DEFAULT 1.0,
            created_at TEXT NOT NULL,
            PRIMARY KEY (src, dst, kind)
        );
        CREATE INDEX relations_dst ON relations (dst);

        -- derived: vectors keyed by the hash of the text embedded and the embedder identity.
        -- A rowid table, not WITHOUT ROWID: 1.5 KiB vectors would spill every row of a
        -- clustered index into overflow pages (2.2x the size, 3x slower to load).
        CREATE TABLE embeddings (
            id        INTEGER PRIMARY KEY,
            model     TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            dim       INTEGER NOT NULL,
            vector    BLOB NOT NULL,
            UNIQUE (model, text_hash)
        );

        -- derived: full-text rows (pre-segmented tokens), rowid = memories.pk
        CREATE VIRTUAL TABLE memory_fts USING fts5 (
            tokens,
            content = '',
            contentless_delete = 1,
            tokenize = 'unicode61 remove_diacritics 2'
        );
        """,
    ),
]

MIGRATIONS.append(
    (
        2,
        "lifecycle: when a memory entered the store, pinning, expiry index",
        """
        ALTER TABLE memories ADD COLUMN stored_at TEXT;
        ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        UPDATE memories SET stored_at = COALESCE(
            (SELECT MIN(e.at) FROM events e WHERE e.memory_id = memories.id), created_at);
        CREATE INDEX memories_expires ON memories (expires_at) WHERE expires_at IS NOT NULL;
        """,
    )
)


MIGRATIONS.append(
    (
        3,
        "ingested sources, injection log, per-session state, LLM usage, background jobs",
        """
        -- one row per ingested document (file path, URL or chat export); its chunks are the
        -- memories whose source is this key
        CREATE TABLE sources (
            key          TEXT PRIMARY KEY,
            kind         TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            title        TEXT,
            doc_time     TEXT,
            size         INTEGER NOT NULL DEFAULT 0,
            mtime        REAL,
            chunks       INTEGER NOT NULL DEFAULT 0,
            scope        TEXT NOT NULL,
            status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleted')),
            ingested_at  TEXT NOT NULL,
            updated_at   TEXT NOT NULL,
            metadata     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX sources_hash ON sources (content_hash);
        CREATE INDEX memories_source ON memories (source, status);

        -- what was put into an assistant's context, when and why (mnemo log)
        CREATE TABLE injections (
            pk         INTEGER PRIMARY KEY,
            at         TEXT NOT NULL,
            session    TEXT,
            surface    TEXT NOT NULL,
            query      TEXT,
            memory_ids TEXT NOT NULL DEFAULT '[]',
            data       TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX injections_session ON injections (session, pk);
        CREATE INDEX injections_at ON injections (at);

        -- small per-session values keyed by the assistant's session id (injected ids, pause)
        CREATE TABLE session_state (
            session    TEXT NOT NULL,
            key        TEXT NOT NULL,
            value      TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (session, key)
        );

        -- calls and tokens spent on an LLM per day and purpose, for budgets and stats
        CREATE TABLE usage (
            day    TEXT NOT NULL,
            kind   TEXT NOT NULL,
            calls  INTEGER NOT NULL DEFAULT 0,
            tokens INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (day, kind)
        );

        -- background work claimed by one process at a time (e.g. extracting a transcript)
        CREATE TABLE jobs (
            key        TEXT PRIMARY KEY,
            state      TEXT NOT NULL,
            owner      TEXT,
            progress   TEXT NOT NULL DEFAULT '{}',
            updated_at TEXT NOT NULL
        );
        """,
    )
)

MIGRATIONS.append(
    (
        4,
        "sync with other devices: each memory's version, the segments applied, the device's state",
        """
        -- the version of each memory as last written here or applied from another device
        -- (mnemo sync): a hybrid-clock version, the version it was derived from, the device that
        -- wrote it, and the memory's seq when it was recorded (-1: purged)
        CREATE TABLE sync_versions (
            memory_id TEXT PRIMARY KEY,
            hlc       TEXT NOT NULL,
            base      TEXT,
            origin    TEXT NOT NULL,
            seq       INTEGER NOT NULL
        );
        -- the other devices' segments applied here
        CREATE TABLE sync_applied (
            device  TEXT NOT NULL,
            segment INTEGER NOT NULL,
            sha256  TEXT NOT NULL,
            at      TEXT NOT NULL,
            PRIMARY KEY (device, segment)
        );
        -- this device's id, clock and cursors
        CREATE TABLE sync_state (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    )
)

MIGRATIONS.append(
    (
        5,
        "recall: a memory's neighbours in its document or conversation",
        """
        -- the chunks of one source by their place (metadata.chunk): recall lifts the turns or
        -- sections around a strong hit, which a question's words may not reach
        CREATE INDEX memories_chunk ON memories (source, json_extract(metadata, '$.chunk'));
        """,
    )
)

LATEST_VERSION = MIGRATIONS[-1][0]
