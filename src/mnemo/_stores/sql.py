"""SQL both backends build the same way, with the few places where SQLite and PostgreSQL spell
things differently passed in as a :class:`Dialect`.

Shared SQL is written with ``?`` placeholders (apsw's style); the PostgreSQL store hands it to
psycopg through :func:`pyformat`. A literal question mark (jsonb's "has element" operator, the
only one the shared SQL needs) is written ``??``, as a literal ``%`` is ``%%`` in psycopg's style.

The Store port (``base.py``) carries no SQL: :class:`~mnemo._stores.base.Filters` is plain data,
and :func:`filter_clause` turns it into a WHERE clause for either engine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .base import Filters


@dataclass(frozen=True)
class Dialect:
    """How one engine spells what the shared SQL needs."""

    #: membership as ``col = ANY(?)`` with one bound list (PostgreSQL: one statement text for
    #: any number of values, and an empty list is simply false) instead of ``col IN (?, ?, …)``
    any_array: bool
    #: the condition that the JSON array in column ``{col}`` holds the bound tag
    tag_test: str
    #: what locks a row read for an update in the same transaction (PostgreSQL); SQLite's
    #: ``BEGIN IMMEDIATE`` already holds the whole file, and it has no FOR UPDATE
    lock_row: str = ""
    #: the expression of a fresh change counter (``seq``) for one updated row
    next_seq: str = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM memories)"
    #: a memory's place in its document or conversation (metadata ``chunk``) in table alias
    #: ``{t}``, spelt as the ``memories_chunk`` index has it so that the index serves the lookup:
    #: SQLite indexes the expression, PostgreSQL a generated text column (see its migration 6;
    #: a cast to a number would fail a write whose metadata says otherwise)
    chunk_of: str = "json_extract({t}metadata, '$.chunk')"
    #: how a chunk number is bound against ``chunk_of``
    chunk_value: type = int

    def member(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values``: the condition and its bindings."""
        if self.any_array:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({marks(len(values))})", list(values)

    def has_tag(self, column: str) -> str:
        """The condition that the JSON tag list in ``column`` holds one bound tag."""
        return self.tag_test.format(col=column)


SQLITE = Dialect(any_array=False, tag_test="EXISTS (SELECT 1 FROM json_each({col}) WHERE value = ?)")
# tags are JSON text on both engines; jsonb's ``?`` (written ``??``) asks whether the array holds the string
POSTGRES = Dialect(any_array=True, tag_test="{col}::jsonb ?? ?", lock_row=" FOR UPDATE", next_seq="nextval('memories_seq')",
                   chunk_of="{t}place", chunk_value=str)


def marks(n: int, param: str = "?") -> str:
    """``n`` comma-separated placeholders, for ``IN (…)`` and ``VALUES (…)``."""
    return ",".join([param] * n)


def filter_clause(f: Filters, dialect: Dialect, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL condition (``?`` placeholders) and bindings for ``f`` over table alias ``alias``;
    ``true`` when ``f`` filters nothing (both engines accept it)."""
    conds: list[str] = []
    args: list[Any] = []
    for column, values in (("status", f.statuses), ("scope", f.scopes), ("type", f.types)):
        # statuses and types filter only when non-empty; scopes also when empty (nothing visible)
        if values or (column == "scope" and values is not None):
            cond, bound = dialect.member(f"{alias}.{column}", values)  # type: ignore[arg-type]
            conds.append(cond)
            args.extend(bound)
    for tag in f.tags or ():
        conds.append(dialect.has_tag(f"{alias}.tags"))
        args.append(tag)
    for cond, value in ((f"{alias}.created_at >= ?", f.since), (f"{alias}.created_at < ?", f.until),
                        (f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)", f.alive_at)):
        if value:
            conds.append(cond)
            args.append(value)
    return (" AND ".join(conds) or "true"), args


_PYFORMAT = {"??": "?", "?": "%s", "%": "%%"}


def pyformat(sql: str) -> str:
    """Shared SQL as psycopg wants it: each ``?`` placeholder becomes ``%s``, ``??`` a literal
    ``?``, and a literal ``%`` is doubled. Shared statements hold no ``?`` in string literals."""
    return re.sub(r"\?\?|[?%]", lambda m: _PYFORMAT[m.group()], sql)
