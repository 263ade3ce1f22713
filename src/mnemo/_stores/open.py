"""Choosing the store for a target: a file path is SQLite, a ``postgresql://`` URL is
PostgreSQL. (Copying one store into another, ``mnemo migrate``, is ``copy.py``.)

The PostgreSQL store (and psycopg) is imported only when a URL asks for it, so SQLite users
never pay for it.
"""

from __future__ import annotations

import os

from . import is_url  # defined in the package itself, where the hooks' fast path reads it
from .base import Store

__all__ = ["is_url", "open_store"]


def open_store(target: str | os.PathLike[str], *, create: bool = True, key: str | None = None,
               read_only: bool = False) -> Store:
    """Open (or, with ``create``, create) the store at ``target``. ``read_only`` opens an SQLite
    file for reading only (a write raises :class:`~mnemo.errors.StoreError`); an SQLite file
    that cannot be written here is opened that way by itself. A PostgreSQL store's rights are
    the database role's, so ``read_only`` does not apply to it."""
    if is_url(target):
        from .postgres import PostgresStore

        return PostgresStore(str(target), create=create, key=key)
    from .sqlite import SQLiteStore

    return SQLiteStore(target, create=create, key=key, read_only=read_only)
