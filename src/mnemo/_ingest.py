"""Ingest: files, folders, Markdown, chat exports and web pages, chunked and kept in sync.

``IngestOps`` is a mixin of :class:`mnemo.Mnemo`.
"""

from __future__ import annotations


class IngestOps:
    """Operations that take documents in (``ingest``, ``sources``)."""
