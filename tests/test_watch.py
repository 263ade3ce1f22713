"""mnemo watch: the inbox folder (watchdog), debounced, surviving bad files, restarting cleanly."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_embedder import FakeEmbedder

from mnemo import Mnemo


@contextmanager
def watching(db: Path, folder: Path, **opts: Any) -> Iterator[list[dict[str, Any]]]:
    """Run ``Mnemo.watch`` in a thread (its own store handle) until the block ends."""
    events: list[dict[str, Any]] = []
    stop = threading.Event()
    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        with Mnemo(db, embedder=FakeEmbedder()) as m:
            box["report"] = m.watch(folder, stop=stop, on_result=lambda e: (events.append(e), ready.set()), **opts)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.5)  # the observer is up (the startup scan reports through events)
    try:
        yield events
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive()
        events.append({"report": box.get("report")})


def wait_for(cond: Callable[[], Any], timeout: float = 10.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def searchable(db: Path, query: str) -> bool:
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        return bool(m.recall(query, mode="fts", touch=False))


def test_new_files_become_searchable_and_bad_files_do_not_stop_the_watch(tmp_path: Path) -> None:
    inbox, db = tmp_path / "inbox", tmp_path / "store.db"
    inbox.mkdir()
    Mnemo(db, embedder=FakeEmbedder()).close()
    with watching(db, inbox, debounce=0.2) as events:
        (inbox / "broken.txt").write_bytes(b"\x00\x01\x02 binary")
        (inbox / ".hidden.md").write_text("# hidden\n\nzebra\n", "utf-8")
        (inbox / "draft.md.swp").write_text("zebra", "utf-8")
        t0 = time.monotonic()
        (inbox / "idea.md").write_text("# Idea\n\nUse a bloom filter in front of the kangaroo cache.\n", "utf-8")
        wait_for(lambda: searchable(db, "kangaroo"))
        latency = time.monotonic() - t0
        wait_for(lambda: any("error" in e for e in events))
        (inbox / "idea.md").write_text("# Idea\n\nUse a cuckoo filter in front of the kangaroo cache.\n", "utf-8")
        wait_for(lambda: searchable(db, "cuckoo"))
    assert latency < 2.0, f"written → searchable took {latency:.2f} s"
    errors = [e for e in events if "error" in e]
    assert len(errors) == 1 and errors[0]["path"].endswith("broken.txt") and "binary" in errors[0]["error"]
    assert [e["action"] for e in events if e.get("path", "").endswith("idea.md")] == ["new", "updated"]
    assert not searchable(db, "zebra")
    assert events[-1]["report"]["processed"] == 2 and events[-1]["report"]["errors"] == 1


def test_restart_does_not_ingest_twice_and_picks_up_what_arrived_meanwhile(tmp_path: Path) -> None:
    inbox, db = tmp_path / "inbox", tmp_path / "store.db"
    inbox.mkdir()
    (inbox / "a.md").write_text("# A\n\nalpha notes\n", "utf-8")
    with watching(db, inbox, debounce=0.1) as events:
        wait_for(lambda: any(e.get("action") == "new" for e in events))
    (inbox / "b.md").write_text("# B\n\nbeta notes\n", "utf-8")  # while nobody watched
    with watching(db, inbox, debounce=0.1) as events:
        wait_for(lambda: searchable(db, "beta"))
    actions = {Path(e["path"]).name: e["action"] for e in events if "path" in e}
    assert actions == {"a.md": "unchanged", "b.md": "new"}
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        assert m.stats()["total"] == 2


def test_deleting_a_file_or_folder_from_the_inbox_archives_its_chunks(tmp_path: Path) -> None:
    inbox, db = tmp_path / "inbox", tmp_path / "store.db"
    (inbox / "trip").mkdir(parents=True)
    (inbox / "keep.md").write_text("# Keep\n\nthe walrus stays\n", "utf-8")
    (inbox / "gone.md").write_text("# Gone\n\nthe narwhal leaves\n", "utf-8")
    (inbox / "trip" / "plan.md").write_text("# Plan\n\npack the platypus\n", "utf-8")
    with watching(db, inbox, debounce=0.1) as events:
        wait_for(lambda: searchable(db, "narwhal") and searchable(db, "platypus"))
        (inbox / "gone.md").unlink()
        wait_for(lambda: not searchable(db, "narwhal"))
        for f in (inbox / "trip").iterdir():
            f.unlink()
        (inbox / "trip").rmdir()
        wait_for(lambda: not searchable(db, "platypus"))
        (inbox / "gone.md").write_text("# Gone\n\nthe narwhal leaves\n", "utf-8")  # it comes back
        wait_for(lambda: searchable(db, "narwhal"))
    assert searchable(db, "walrus")
    archived = [e for e in events if e.get("action") == "archived"]
    assert "gone.md" in {Path(e["path"]).name for e in archived} and events[-1]["report"]["archived"] == 2
    with Mnemo(db, embedder=FakeEmbedder()) as m:  # archived, not deleted: the history says why
        (mem,) = m.store.memories_by_source(f"file:{inbox / 'trip' / 'plan.md'}", ("archived",))
        assert [e["kind"] for e in m.history(mem.id)][-1] == "archived"


def test_move_processed_moves_the_file_and_its_source(tmp_path: Path) -> None:
    inbox, db = tmp_path / "inbox", tmp_path / "store.db"
    inbox.mkdir()
    with watching(db, inbox, debounce=0.1, move_processed=True) as events:
        (inbox / "todo.md").write_text("# Todo\n\nrenew the passport in March\n", "utf-8")
        wait_for(lambda: any(e.get("moved_to") for e in events))
        time.sleep(0.5)  # the move's own events must not ingest it again
    target = inbox / "processed" / "todo.md"
    assert target.exists() and not (inbox / "todo.md").exists()
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        (src,) = m.sources()
        assert src["key"] == f"file:{target}"
        assert [c.source for c in m.store.memories_by_source(src["key"])] == [src["key"]]
    assert len([e for e in events if "path" in e]) == 1


def test_cli_watch_runs_as_a_process_until_interrupted(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    env = dict(os.environ, MNEMO_DB=str(tmp_path / "w.db"))
    proc = subprocess.Popen([sys.executable, "-m", "mnemo", "watch", str(inbox), "--json", "--debounce", "0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(2.0)
        (inbox / "n.md").write_text("# N\n\nwombat sightings\n", "utf-8")
        assert select.select([proc.stdout], [], [], 30)[0], "mnemo watch printed nothing in 30 s"
        line = proc.stdout.readline()
        assert json.loads(line)["action"] == "new"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert json.loads(out)["processed"] == 1


def test_watch_rejects_a_missing_folder(m: Mnemo, tmp_path: Path) -> None:
    from mnemo.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="not a folder"):
        m.watch(tmp_path / "nope")
