"""The console script leaves without the interpreter's teardown once a command has finished:
its output, exit status and store must be exactly what an ordinary exit leaves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _mnemo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mnemo", *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.sqlite_only
def test_a_command_ends_with_its_output_status_and_a_closed_store(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    saved = _mnemo("--db", db, "save", "We deploy on Fridays after the review.", "--json")
    assert saved.returncode == 0, saved.stderr
    assert '"content": "We deploy on Fridays after the review."' in saved.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("s.db")) == ["s.db"]  # log checkpointed, closed
    found = _mnemo("--db", db, "search", "deploy fridays", "--json")
    assert found.returncode == 0 and "We deploy on Fridays" in found.stdout
    missing = _mnemo("--db", str(tmp_path / "none.db"), "search", "x")
    assert missing.returncode == 4 and "no mnemo store" in missing.stderr
    usage = _mnemo("--db", db, "no-such-command")
    assert usage.returncode == 2 and "No such command" in usage.stderr


@pytest.mark.sqlite_only
def test_a_connection_left_open_is_closed_before_leaving(tmp_path: Path) -> None:
    """Teardown closed an SQLite connection nobody closed (checkpointing its log); leaving
    without teardown closes it first."""
    db = tmp_path / "t.db"
    code = (
        "import apsw, sys\n"
        "from mnemo.__main__ import _leave\n"
        f"c = apsw.Connection({str(db)!r})\n"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('CREATE TABLE t (x)'); c.execute('INSERT INTO t VALUES (42)')\n"
        "print('written', flush=True)\n"
        "sys.stdout.write('unflushed')\n"
        "import atexit; atexit.register(lambda: print(' and handled', end=''))\n"
        "_leave(3)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ})
    assert res.returncode == 3 and res.stdout == "written\nunflushed and handled"  # exit handlers ran, output flushed
    assert not (tmp_path / "t.db-wal").exists()
    import apsw

    assert apsw.Connection(str(db)).execute("SELECT x FROM t").fetchall() == [(42,)]


def test_a_message_as_exit_code_is_printed_and_ends_with_status_one() -> None:
    res = subprocess.run([sys.executable, "-c", "from mnemo.__main__ import _leave\n_leave('cannot go on')"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and res.stderr == "cannot go on\n"
    res = subprocess.run([sys.executable, "-c", "from mnemo.__main__ import _leave\n_leave(None)"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == ""
