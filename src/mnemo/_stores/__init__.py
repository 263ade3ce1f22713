"""The Store port and its two backends (SQLite, PostgreSQL + pgvector), their schemas, opening and copying stores.

``is_url`` lives here, with no imports, because the hooks' fast path needs it (which service
socket serves this store?) and must not load the backends to ask.
"""

from __future__ import annotations


def is_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL database (``postgresql://…``) rather than a file."""
    return isinstance(target, str) and target.startswith(("postgres://", "postgresql://"))


def is_database_error(exc: BaseException) -> bool:
    """True for an exception of the SQLite driver (apsw): a damaged file, a failed statement.
    Asked at the command line's edge, which must not import the driver to recognise its errors
    (the backends turn what they expect into ``StoreError``; this catches what slipped past)."""
    import sys

    apsw = sys.modules.get("apsw")  # not loaded: the error cannot be one of its
    return apsw is not None and isinstance(exc, apsw.Error)
