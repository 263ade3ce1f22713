"""The Store port and its two backends (SQLite, PostgreSQL + pgvector), their schemas, opening and copying stores.

``is_url`` and ``store_identity`` live here, with no imports, because the fast paths of the hooks
and the CLI need them (which service socket serves this store?) and must not load the backends
to ask.
"""

from __future__ import annotations


def is_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL database (``postgresql://…``) rather than a file."""
    return isinstance(target, str) and target.startswith(("postgres://", "postgresql://"))


def store_identity(db: str) -> str:
    """What names one store, whatever the spelling: a file's real path; for a database URL its
    user, host, port and database with the query parameters sorted, the password left out
    (``postgres://`` and ``postgresql://`` alike). Two spellings of one database then share one
    warm service; two databases, two roles or two servers never do."""
    import os

    if not is_url(db):
        return os.path.realpath(db)
    from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

    parts = urlsplit(db)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = unquote(userinfo.partition(":")[0])
    try:
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:  # not a number: keep the text; libpq will say what is wrong with it
        host, port = hostport.lower(), None
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password")
    return "postgresql://" + urlencode({"user": user, "host": host, "port": port or "", "dbname": unquote(parts.path.lstrip("/"))}) + \
        "?" + urlencode(query)


def is_database_error(exc: BaseException) -> bool:
    """True for an exception of the SQLite driver (apsw): a damaged file, a failed statement.
    Asked at the command line's edge, which must not import the driver to recognise its errors
    (the backends turn what they expect into ``StoreError``; this catches what slipped past)."""
    import sys

    apsw = sys.modules.get("apsw")  # not loaded: the error cannot be one of its
    return apsw is not None and isinstance(exc, apsw.Error)
