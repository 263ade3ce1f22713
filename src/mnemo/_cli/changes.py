"""``mnemo changes`` (what the store merged, superseded, archived, forgot or edited lately, with the
command that undoes each) and ``mnemo activity`` (memories and injections per week)."""

from __future__ import annotations

from typing import Any

import click

from .base import OPERATIONS, CLIState, _render, command

OPERATIONS.update({"changes": "changes", "activity": "activity"})


@command("changes")
@click.option("--days", type=click.FloatRange(min=0.01), default=7, show_default=True, help="How many days back.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="Most changes to list.")
@click.option("--scope", help="A scope (plus global), or 'all' (default: the current scope plus global).")
def changes_cmd(state: CLIState, days: float, limit: int, scope: str | None) -> None:
    """What the store did to memories lately (merges, supersedes, archives, forgets, edits), newest first.

    Each change the memory's restore would undo says so: `mnemo restore ID`."""
    with state.open() as m:
        found = m.changes(days=days, scope=scope, limit=limit)
    rows = [{**c, "memory": c["memory"].to_dict()} for c in found]
    state.emit(rows, lambda: _changes_text(rows, days))


def _changes_text(rows: list[dict[str, Any]], days: float) -> None:
    from rich.markup import escape

    if not rows:
        _render.out.print(f"no merges, supersedes, archives, forgets or edits in the last {days:g} days")
        return
    for c in rows:
        mem = c["memory"]
        text = mem["content"] if len(mem["content"]) <= 90 else mem["content"][:89] + "…"
        undo = f"  [dim]undo: mnemo restore {mem['id']}[/]" if c["undo"] else ""
        _render.out.print(f"{c['at'][:16].replace('T', ' ')}  [bold]{c['kind']}[/] ({escape(c['cause'] or '')})  {escape(text)}{undo}")


@command("activity")
@click.option("--weeks", type=click.IntRange(1, 520), default=12, show_default=True, help="How many weeks back.")
def activity_cmd(state: CLIState, weeks: int) -> None:
    """Memories created per week (by type) and context injections per week."""
    with state.open() as m:
        act = m.activity(weeks=weeks)
    state.emit(act, lambda: _activity_table(act))


def _activity_table(act: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("week of")
    types = sorted(act["created_by_type"], key=lambda t: -sum(act["created_by_type"][t]))
    for t in types:
        table.add_column(t.replace("_", " "), justify="right")
    table.add_column("injections", justify="right")
    for i, week in enumerate(act["weeks"]):
        table.add_row(week, *(str(act["created_by_type"][t][i] or "·") for t in types), str(act["injections"][i] or "·"))
    _render.out.print(table)
