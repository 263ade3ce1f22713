"""What both backends share about rows: the memory columns and how a row becomes a
:class:`~mnemo._base.models.Memory` (and a memory the values of a row), the ``sources``
columns, and the checks of ``update_fields``.

The two schemas store a memory the same way (tags and metadata as JSON text, times as ISO
text), so one mapping serves both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._base.models import Memory, format_time, utcnow

#: the memory columns a read selects, in :class:`Memory`'s field order
MEMORY_FIELDS = (
    "id", "content", "type", "scope", "tags", "importance", "confidence", "source", "source_session", "created_at",
    "updated_at", "last_accessed_at", "access_count", "status", "superseded_by", "expires_at", "content_hash",
    "metadata", "stored_at", "pinned",
)
MEMORY_COLUMNS = ", ".join(MEMORY_FIELDS)

#: the columns ``update_fields`` may change (``tokens`` is the full-text row, not a column)
UPDATABLE = frozenset({"tags", "importance", "confidence", "content", "content_hash", "embed_hash", "type",
                       "scope", "expires_at", "pinned", "metadata", "superseded_by", "tokens"})

#: one row per ingested document (migration 3)
SOURCE_COLUMNS = ("key", "kind", "content_hash", "title", "doc_time", "size", "mtime", "chunks", "scope",
                  "status", "ingested_at", "updated_at", "metadata")


def row_to_memory(row: Sequence[Any]) -> Memory:
    """The memory in a row of :data:`MEMORY_COLUMNS`."""
    fields = dict(zip(MEMORY_FIELDS, row))
    fields["tags"] = json.loads(fields["tags"])
    fields["metadata"] = json.loads(fields["metadata"])
    fields["pinned"] = bool(fields["pinned"])  # SQLite stores 0/1
    return Memory(**fields)


def memory_values(mem: Memory) -> tuple[Any, ...]:
    """The values of :data:`MEMORY_COLUMNS` for inserting ``mem``; a memory that does not say
    when it entered the store enters it now. ``pinned`` stays a bool: apsw binds it as 0/1,
    PostgreSQL's column is boolean."""
    return (
        mem.id, mem.content, mem.type, mem.scope, json.dumps(mem.tags, ensure_ascii=False),
        mem.importance, mem.confidence, mem.source, mem.source_session, mem.created_at,
        mem.updated_at, mem.last_accessed_at, mem.access_count, mem.status, mem.superseded_by,
        mem.expires_at, mem.content_hash, json.dumps(mem.metadata, ensure_ascii=False),
        mem.stored_at or format_time(utcnow()), bool(mem.pinned),
    )


def update_values(fields: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``update_fields``'s keyword arguments as column values (JSON for tags and metadata) and
    the new full-text tokens, if any; an unknown field is a programming error."""
    if not set(fields) <= UPDATABLE:
        raise ValueError(f"cannot update {set(fields) - UPDATABLE}")
    tokens = fields.get("tokens")
    values = {k: (json.dumps(v, ensure_ascii=False) if k in ("tags", "metadata") else (bool(v) if k == "pinned" else v))
              for k, v in fields.items() if k != "tokens"}
    return values, tokens


def source_row(row: Sequence[Any]) -> dict[str, Any]:
    """A ``sources`` row of :data:`SOURCE_COLUMNS` as a dict, metadata decoded."""
    d = dict(zip(SOURCE_COLUMNS, row))
    d["metadata"] = json.loads(d["metadata"] or "{}")
    return d
