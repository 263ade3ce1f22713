"""``mnemo sync`` (one memory on every device, through any shared folder) and ``mnemo merge``
(another store, once)."""

from __future__ import annotations

from typing import Any

import click

from .base import OPERATIONS, CLIState, _render, command

OPERATIONS.update({"sync": "sync", "merge": "merge"})


def _progress(state: CLIState, label: str) -> Any:
    """A Rich progress callback on a terminal (None with --json or when output is not a terminal)."""
    if state.as_json or not _render.err.is_terminal:
        return None
    from rich.progress import Progress

    bar = Progress(console=_render.err, transient=True)
    task = bar.add_task(label, total=None)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total or None)
        if total and done >= total:
            bar.stop()
    return update


@command("sync", scope_option=True)
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--status", "show_status", is_flag=True, help="Only show the devices, the segments waiting and the conflicts resolved.")
@click.option("--scope", "scopes", multiple=True, help="Sync only this scope (repeat for several), e.g. a project shared with a team store.")
@click.option("--compact", is_flag=True, help="Fold this device's files into one snapshot (done by itself past 200 files).")
def sync_cmd(state: CLIState, folder: str | None, show_status: bool, scopes: tuple[str, ...], compact: bool) -> None:
    """Sync this store with your other devices through FOLDER (default: the setting sync_dir).

    Put FOLDER in a Syncthing, Dropbox, iCloud, OneDrive or 坚果云 folder: each device writes its
    changes there as small files and applies the others'; every device ends with the same
    memories. Never put the store itself in such a folder. A purge is a purge everywhere."""
    folder = folder or state.config["sync_dir"]
    if not folder:
        raise click.UsageError("give the shared FOLDER, or set sync_dir (mnemo config)")
    key = state.key()
    with state.open(create=True) as m:
        if show_status:
            res = m.sync_status(folder, key=key)
            state.emit(res, lambda: _status_text(res))
            return
        res = m.sync(folder, key=key, scopes=list(scopes) or None, compact=compact, progress=_progress(state, "applying"))
    state.emit(res, lambda: _sync_text(res))


def _sync_text(res: dict[str, Any]) -> None:
    from rich.markup import escape

    parts = [f"wrote {res['written']} ({res['pushed']} changes)" if res["written"] else "nothing new to write"]
    parts.append(f"applied {res['segments_applied']} segments ({res['records_applied']} changes)" if res["segments_applied"] else "nothing new to apply")
    if res["conflicts"]:
        parts.append(f"{res['conflicts']} conflicting edits resolved (mnemo sync --status)")
    if res["purged"]:
        parts.append(f"{res['purged']} purged")
    if res.get("compacted"):
        parts.append(f"{res['compacted']} files folded into one")
    _render.out.print(f"device {escape(res['device'])}: " + " · ".join(parts))
    for s in res["skipped"]:
        _render.err.print(f"[yellow]skipped for now[/] {escape(s['file'])}: {escape(s['why'])}")


def _status_text(res: dict[str, Any]) -> None:
    from rich.markup import escape

    _render.out.print(f"this device: [bold]{escape(res['device'])}[/] · folder {escape(res['folder'])}")
    for d in res["devices"]:
        mark = " (this one)" if d["this"] else ""
        line = f"  {escape(d['device'])}{mark}: {d['segments']} segments" + ("" if d["this"] else f", {d['applied']} applied here")
        _render.out.print(line)
        for w in d["waiting"]:
            _render.out.print(f"    waiting: {w['segment']:08d}.seg — {escape(w['why'])}")
    if res["conflicts"]:
        _render.out.print(f"conflicting edits resolved ({len(res['conflicts'])}); the losing version is in each memory's history:")
        for c in res["conflicts"][:20]:
            lost = (c.get("lost") or {}).get("content") or ""
            _render.out.print(f"  {escape(c['memory_id'])} {c['at'][:16]} lost: {escape(lost[:80])}")


@command("merge")
@click.argument("other", metavar="OTHER.db|URL")
@click.option("--other-key", envvar="MNEMO_OTHER_KEY", help="The key of OTHER when it is encrypted (or MNEMO_OTHER_KEY).")
def merge_cmd(state: CLIState, other: str, other_key: str | None) -> None:
    """Merge another store into this one, once: history and links come along, repeats merge as in save.

    OTHER is only read. For devices that keep changing, use mnemo sync."""
    with state.open(create=True) as m:
        before = m.stats()["all_records"]
        res = m.merge(other, key=other_key, progress=_progress(state, "merging"))
        res["records_before"], res["records_after"] = before, m.stats()["all_records"]
    state.emit(res, lambda: _render.line(
        f"read {res['read']} memories: {res['created']} new, {res['merged']} merged into existing ones, "
        f"{res['superseded']} superseding older ones, {res['related']} linked, {res['added_as_they_were']} kept as they were "
        f"(forgotten/archived), {res['updated']} updated, {res['unchanged']} already here · records {res['records_before']} → {res['records_after']}"))
