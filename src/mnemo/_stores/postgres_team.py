"""Team methods of the PostgreSQL store, which SQLite (one user, one file) has no use for:
private scopes and the acting role (``mnemo team``).

A mixin of :class:`~mnemo._stores.postgres.PostgresStore`, over its ``_execute``/``_q``/``_one``
(psycopg placeholders). Visibility itself is enforced by the schema's row-level security
(``postgres_schema``); these methods only record the role's choices.
"""

from __future__ import annotations

from typing import Any


class PgTeam:
    """Private scopes and the acting role, for :class:`~mnemo._stores.postgres.PostgresStore`."""

    def _execute(self, sql: str, args: Any = None) -> Any: ...  # provided by the store
    def _q(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]: ...
    def _one(self, sql: str, args: Any = None) -> tuple[Any, ...] | None: ...

    def set_private_scope(self, scope: str, private: bool) -> None:
        """Make this role's future memories in ``scope`` private (or shared again); its
        existing memories there (with their postings and history) follow."""
        if private:
            self._execute("INSERT INTO private_scopes (scope) VALUES (%s) ON CONFLICT DO NOTHING", (scope,))
        else:
            self._execute("DELETE FROM private_scopes WHERE scope = %s", (scope,))
        # the memories, their full-text postings and their history (a private memory's history
        # is private too) all carry the visibility row-level security reads
        args = ("private" if private else "shared", scope)
        self._execute("UPDATE memories SET visibility = %s WHERE scope = %s AND owner = current_user", args)
        self._execute("UPDATE memory_terms t SET visibility = %s FROM memories m WHERE m.pk = t.pk "
                      "AND m.scope = %s AND m.owner = current_user", args)
        self._execute("UPDATE events e SET mem_visibility = %s FROM memories m WHERE m.id = e.memory_id "
                      "AND m.scope = %s AND m.owner = current_user", args)
        # the documents this role ingested into the scope; links and vectors need nothing: they
        # are visible through the memories they belong to
        self._execute("UPDATE sources SET visibility = %s WHERE scope = %s AND owner = current_user", args)

    def private_scopes(self) -> list[str]:
        """The scopes this role keeps private."""
        return [r[0] for r in self._q("SELECT scope FROM private_scopes ORDER BY scope")]

    def whoami(self) -> str:
        """The database role this store acts as (the owner of what it writes)."""
        return str(self._one("SELECT current_user")[0])  # type: ignore[index]
