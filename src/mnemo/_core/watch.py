"""The inbox: watch a folder and ingest what appears or changes in it.

A watchdog observer thread only notes which paths had events; the calling thread ingests a
path once no event has touched it for ``debounce`` seconds (an editor's save is several
events, a copy of a large file many). Everything is ingested through ``Mnemo.ingest``, so the
``sources`` table records each processed file and its content hash: after a restart the
startup scan finds unchanged files and skips them (no double ingestion). A bad file is
reported and the watch goes on. With ``move_processed`` a file that was ingested is moved to
``processed/`` inside the folder and its source follows it (a rename, nothing re-embedded).
A file (or folder) deleted from the inbox has its chunks archived, as ``ingest --sync`` does;
they come back if the file does.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._ingest.docs import KINDS
from ..errors import InvalidInputError, MnemoError

if TYPE_CHECKING:
    from .mnemo import Mnemo

PROCESSED = "processed"
#: editors' temporary and swap files are never ingested
_TEMP_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload", ".partial")


def watch_folder(
    m: "Mnemo",
    folder: str | os.PathLike[str],
    *,
    debounce: float = 0.5,
    move_processed: bool = False,
    stop: threading.Event | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    poll: float = 0.05,
    **ingest_opts: Any,
) -> dict[str, Any]:
    """Ingest ``folder`` now, then every file that appears or changes in it, until ``stop`` is
    set (or KeyboardInterrupt). ``on_result`` gets one dict per processed file
    (``{"path", "action", "chunks"}`` or ``{"path", "error"}``). Returns the totals."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    root = Path(os.path.expanduser(os.fspath(folder))).absolute()
    if not root.is_dir():
        raise InvalidInputError(f"{root} is not a folder")
    if not 0 <= debounce <= 60:
        raise InvalidInputError("debounce must be between 0 and 60 seconds")
    stop = stop or threading.Event()
    report = {"folder": str(root), "processed": 0, "unchanged": 0, "errors": 0, "moved": 0, "archived": 0}
    emit = on_result or (lambda r: None)
    pending: dict[str, float] = {}
    gone: dict[str, float] = {}
    lock = threading.Lock()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            now = time.monotonic()
            if event.event_type in ("deleted", "moved"):  # what was at the old path may be gone
                with lock:
                    gone[os.fsdecode(event.src_path)] = now
            if event.is_directory or event.event_type not in ("created", "modified", "moved", "closed"):
                return
            path = os.fsdecode(getattr(event, "dest_path", "") or event.src_path)
            with lock:
                pending[path] = now

    exclude = tuple(ingest_opts.pop("exclude", ())) + ((PROCESSED,) if move_processed else ())
    opts = dict(ingest_opts, exclude=exclude)
    m._check_model()
    m.embedder.embed_passages(["warm up"])  # the first file should not wait for the model to load
    observer = Observer()
    observer.schedule(Handler(), str(root), recursive=True)
    observer.start()
    try:
        # files that arrived while nobody watched (unchanged ones are skipped by their hash)
        for path in _startup_files(root, move_processed):
            _process(m, root, path, move_processed, opts, report, emit)
        while not stop.is_set():
            stop.wait(poll)
            now = time.monotonic()
            with lock:
                ready, removed = _settled(pending, now - debounce), _settled(gone, now - debounce)
            for p in ready:
                path = Path(p)
                if _wanted(root, path, move_processed):
                    _process(m, root, path, move_processed, opts, report, emit)
            for p in removed:
                if not os.path.lexists(p):
                    _archive(m, Path(p), report, emit)
    except KeyboardInterrupt:
        pass
    finally:
        observer.stop()
        observer.join(timeout=5)
    return report


def _settled(events: dict[str, float], before: float) -> list[str]:
    """Take out of ``events`` the paths no event has touched since ``before``, in order."""
    out = sorted(p for p, t in events.items() if t <= before)
    for p in out:
        del events[p]
    return out


def _startup_files(root: Path, move_processed: bool) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (move_processed and Path(dirpath) == root and d == PROCESSED))
        out.extend(Path(dirpath) / f for f in sorted(filenames))
    return [p for p in out if _wanted(root, p, move_processed)]


def _wanted(root: Path, path: Path, move_processed: bool) -> bool:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if any(part.startswith(".") for part in rel.parts) or path.name.endswith(_TEMP_SUFFIXES):
        return False
    if move_processed and rel.parts[0] == PROCESSED:
        return False
    return path.suffix.lower() in KINDS and path.is_file()


def _process(m: "Mnemo", root: Path, path: Path, move_processed: bool, opts: dict[str, Any], report: dict[str, Any],
             emit: Callable[[dict[str, Any]], None]) -> None:
    try:
        result = m.ingest([str(path)], **opts)
    except MnemoError as exc:  # a bad file is logged and the watch goes on
        report["errors"] += 1
        emit({"path": str(path), "error": str(exc)})
        return
    src = result["sources"][0] if result["sources"] else {"action": "skipped", "chunks": 0, "key": ""}
    if src["action"] == "unchanged":
        report["unchanged"] += 1
    else:
        report["processed"] += 1
    entry: dict[str, Any] = {"path": str(path), "action": src["action"], "chunks": src["chunks"],
                             "seconds": round(sum(result["timings"].values()), 3)}
    if move_processed and src.get("key"):
        entry["moved_to"] = str(_move(m, root, path, src["key"]))
        report["moved"] += 1
    emit(entry)


def _archive(m: "Mnemo", path: Path, report: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> None:
    """Archive the chunks of a file or folder that left the inbox (nothing, if none was ingested
    from there: an editor's temporary file, or a file the inbox itself moved to ``processed/``)."""
    try:
        result = m.ingest([str(path)], sync=True)
    except MnemoError as exc:
        report["errors"] += 1
        emit({"path": str(path), "error": str(exc)})
        return
    if result["archived"]:
        report["archived"] += result["archived"]
        emit({"path": str(path), "action": "archived", "chunks": result["archived"]})


def _move(m: "Mnemo", root: Path, path: Path, key: str) -> Path:
    """Move an ingested file under ``processed/`` and point its source at the new place."""
    target = root / PROCESSED / path.relative_to(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while target.exists():
        target = target.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    shutil.move(str(path), str(target))
    prefix = key.split(":", 1)[0]
    m._move_source(key, f"{prefix}:{target}")
    return target
