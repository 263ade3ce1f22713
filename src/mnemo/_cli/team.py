"""Team commands: ``mnemo migrate`` (copy a store between SQLite and PostgreSQL, either way) and
``mnemo visibility`` (which of your scopes on a shared PostgreSQL store are private to you).

``migrate`` works on stores rather than on memories (like ``encrypt``), so it is not a ``Mnemo``
operation; ``visibility`` is (``Mnemo.visibility``).
"""

from __future__ import annotations

from typing import Any

import click

from .base import OPERATIONS, CLIState, _render, command

OPERATIONS.update({"visibility": "visibility"})


def _open(target: str, *, create: bool, key: str | None = None) -> Any:
    from .._stores.open import open_store

    return open_store(target, create=create, key=key)


@command("migrate")
@click.option("--to", "to", required=True, metavar="PATH|URL", help="Target store: a postgresql:// URL or a file path (created if missing).")
@click.option("--from", "from_", metavar="PATH|URL", help="Source store (default: the configured store, --db).")
def migrate_cmd(state: CLIState, to: str, from_: str | None) -> None:
    """Copy a store into another: SQLite to PostgreSQL for a team, or back for a local copy.

    Memories (every status), history, relations, ingested sources, the injection log and — when
    the embedding model matches — vectors are copied; then every memory is verified by content
    hash. Idempotent: running it again copies only what is new."""
    from .._stores.copy import copy_store

    source = from_ or state.config.db
    if source == to:
        raise click.UsageError("--to names the source store itself")
    src = _open(source, create=False, key=state.key() if source == state.config.db else None)
    try:
        dst = _open(to, create=True)
        try:
            with _render.progress("copying", enabled=not state.as_json) as tick:
                report = copy_store(src, dst, progress=tick)
        finally:
            dst.close()
    finally:
        src.close()

    def text() -> None:
        _render.line(f"copied {report['copied']} of {report['memories']} memories ({report['already_there']} already there), "
                     f"{report['events']} events, {report['relations']} relations, {report['vectors']} vectors "
                     f"from {report['from']} to {report['to']}; verified {report['verified']['memories']} by content hash")
        if not report["vectors_copied"] and report["model"]:
            _render.line(f"vectors were not copied: the target uses another model; run `mnemo reindex --db {to}`")

    state.emit(report, text)


@command("visibility")
@click.argument("scope", required=False)
@click.argument("mode", required=False, type=click.Choice(["private", "shared"]))
def visibility_cmd(state: CLIState, scope: str | None, mode: str | None) -> None:
    """On a PostgreSQL team store: make SCOPE private to you (or shared with the team again).

    Private memories are hidden from every other database role by PostgreSQL's row-level
    security. Without arguments, shows who you are and your private scopes."""
    if scope is not None and mode is None:
        raise click.UsageError("say private or shared, e.g. `mnemo visibility project:notes private`")
    with state.open() as m:
        info = m.visibility(scope, None if mode is None else mode == "private")
    state.emit(info, lambda: _render.line(f"role {info['role']}; private scopes: {', '.join(info['private_scopes']) or 'none'}"))
