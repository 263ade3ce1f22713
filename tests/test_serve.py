"""The warm service: one per store, answers hooks, started on demand, exits when idle."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemo import Mnemo
from mnemo._hooks.client import lock_path, request, service_running, socket_path
from mnemo._settings.scope import project_scope

MNEMO = str(Path(sys.executable).with_name("mnemo"))
DATA = Path(__file__).parent / "data" / "hooks"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    from fake_embedder import FakeEmbedder

    db = Path(os.environ["MNEMO_HOME"]) / "memory.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        m.remember("We use PostgreSQL 16 for the main database", type="decision", scope=project_scope(root))
    return db


def _payload(root: Path, session: str = "s-1") -> str:
    data = json.loads((DATA / "user_prompt.json").read_text("utf-8"))
    data.update(cwd=str(root), session_id=session)
    return json.dumps(data)


def _wait(cond, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def _serve(db: Path, idle: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([MNEMO, "serve", "--db", str(db), "--idle", str(idle), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _wait(lambda: request(str(db), {"op": "ping"}) is not None), proc.stderr.read() if proc.poll() is not None else "no answer"
    return proc


def test_service_answers_hooks_runs_once_per_store_and_exits_when_idle(store: Path, tmp_path: Path) -> None:
    proc = _serve(store, idle=3)
    try:
        assert service_running(str(store))
        assert oct(os.stat(socket_path(str(store))).st_mode & 0o777) == "0o600"
        second = subprocess.run([MNEMO, "serve", "--db", str(store), "--idle", "3"], capture_output=True, text=True, timeout=60)
        assert second.returncode == 4 and "already serves" in second.stderr  # never twice for one store
        r = subprocess.run([MNEMO, "hook", "user-prompt", "--db", str(store)], input=_payload(tmp_path / "app"),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "PostgreSQL 16" in r.stdout
        assert request(str(store), {"op": "ping"})["served"] >= 2  # the hook was answered by the service
        r = subprocess.run([sys.executable, "-X", "importtime", MNEMO, "hook", "user-prompt", "--db", str(store)],
                           input=_payload(tmp_path / "app", "s-imports"), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "PostgreSQL 16" in r.stdout
        imported = {line.split("|")[-1].strip().split(".")[0] for line in r.stderr.splitlines() if line.startswith("import time:")}
        assert "mnemo" in imported and not imported & {"numpy", "apsw", "click", "rich", "mcp", "pydantic"}, imported
        bad = request(str(store), {"op": "hook", "event": "user-prompt", "payload": "not a dict"})
        assert bad["exit"] == 1 and "JSON object" in bad["stderr"]
        assert request(str(store), {"op": "ping"})["ok"]  # still serving
        out, _ = proc.communicate(timeout=30)  # idle exit
        assert proc.returncode == 0 and json.loads(out)["served"] >= 3
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not os.path.exists(socket_path(str(store))) and not service_running(str(store))
    assert os.path.exists(lock_path(str(store)))


def test_sigterm_and_stop_end_the_service_cleanly(store: Path) -> None:
    proc = _serve(store, idle=60)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert not os.path.exists(socket_path(str(store)))
    proc = _serve(store, idle=60)
    r = subprocess.run([MNEMO, "serve", "--db", str(store), "--stop", "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout)["stopped"] is True
    proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_first_hook_starts_the_service_detached_and_it_goes_away(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "2")
    started = time.monotonic()
    r = subprocess.run([MNEMO, "hook", "user-prompt"], input=_payload(tmp_path / "app"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "PostgreSQL 16" in r.stdout  # answered in-process this time
    assert time.monotonic() - started < 30
    assert _wait(lambda: request(str(store), {"op": "ping"}) is not None), "the hook did not start a service"
    pid = request(str(store), {"op": "ping"})["pid"]
    r = subprocess.run([MNEMO, "hook", "user-prompt"], input=_payload(tmp_path / "app", "s-2"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "PostgreSQL 16" in r.stdout
    assert _wait(lambda: not service_running(str(store)), timeout=30), "the service did not exit when idle"

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of a parent that is not us still counts as gone once it is reaped by init
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
        except OSError:
            return True

    assert _wait(gone, timeout=10), "orphan service process"


def test_a_stale_socket_is_replaced(store: Path) -> None:
    path = socket_path(str(store))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # a dead service left its socket behind
    assert request(str(store), {"op": "ping"}) is None
    proc = _serve(store, idle=2)
    proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_a_service_that_never_answers_does_not_hang_the_hook(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "0")
    path = socket_path(str(store))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(path)
    silent.listen(4)  # accepts connections, never reads or answers
    try:
        started = time.monotonic()
        r = subprocess.run([MNEMO, "hook", "user-prompt"], input=_payload(tmp_path / "app"), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "PostgreSQL 16" in r.stdout  # answered in-process after the reply timeout
        assert time.monotonic() - started < 12
    finally:
        silent.close()
        os.unlink(path)


def test_a_replaced_store_file_retires_the_service(store: Path, tmp_path: Path) -> None:
    proc = _serve(store, idle=60)
    copy = tmp_path / "copy.db"
    import shutil

    shutil.copyfile(store, copy)
    os.replace(copy, store)  # what encrypt/decrypt/rekey do
    r = subprocess.run([MNEMO, "hook", "user-prompt", "--db", str(store)], input=_payload(tmp_path / "app"),
                       capture_output=True, text=True, timeout=60, env={**os.environ, "MNEMO_SERVE_IDLE_SECONDS": "0"})
    assert r.returncode == 0 and "PostgreSQL 16" in r.stdout  # answered in-process from the new file
    proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_one_service_per_database_however_its_url_is_spelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The socket and lock of a database URL are keyed on the database, not on the URL's text:
    reordered query parameters, a password or the scheme's short spelling share one service;
    another database, role, host, port or socket folder does not."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    base = "postgresql://alice@/team?host=/run/postgresql&port=5432&sslmode=disable"
    same = ["postgresql://alice@/team?sslmode=disable&port=5432&host=/run/postgresql",
            "postgres://alice:s3cret@/team?port=5432&host=/run/postgresql&sslmode=disable",
            "postgresql://alice@/team?password=other&sslmode=disable&host=/run/postgresql&port=5432"]
    for url in same:
        assert socket_path(url) == socket_path(base), url
        assert lock_path(url) == lock_path(base), url
    other = ["postgresql://alice@/other?host=/run/postgresql&port=5432&sslmode=disable",
             "postgresql://bob@/team?host=/run/postgresql&port=5432&sslmode=disable",
             "postgresql://alice@/team?host=/tmp/pg&port=5432&sslmode=disable",
             "postgresql://alice@/team?host=/run/postgresql&port=5433&sslmode=disable",
             "postgresql://alice@db.example:5432/team?sslmode=disable",
             "postgresql://alice@db.example:5433/team?sslmode=disable"]
    paths = {socket_path(u) for u in [base, *other]}
    assert len(paths) == 1 + len(other)
    # a store file is keyed on its real path, as before
    (tmp_path / "a.db").touch()
    (tmp_path / "link.db").symlink_to(tmp_path / "a.db")
    assert socket_path(str(tmp_path / "link.db")) == socket_path(str(tmp_path / "a.db")) != socket_path(str(tmp_path / "b.db"))
