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
from mnemo.errors import MnemoError

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
        # nor the standard library's slower wrappers: together ~25 ms of a ~60 ms hook (measured)
        assert not imported & {"dataclasses", "inspect", "pathlib", "typing", "tomllib", "platformdirs", "hashlib", "socket"}, imported
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


def test_a_model_command_typed_at_a_terminal_leaves_a_service_starting(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pexpect

    monkeypatch.setenv("MNEMO_SERVE_IDLE_SECONDS", "2")
    # from a script (no terminal): in-process, and no service is left behind
    r = subprocess.run([MNEMO, "save", "Redis is the cache in front of the orders API"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    time.sleep(1.5)
    assert not service_running(str(store)) and request(str(store), {"op": "ping"}) is None
    # typed at a terminal: in-process too, and as it exits it starts the service for the next one
    child = pexpect.spawn(MNEMO, ["save", "Kafka carries the order events"], env=dict(os.environ), encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert _wait(lambda: request(str(store), {"op": "ping"}) is not None), "the command did not start a service"
    child = pexpect.spawn(MNEMO, ["search", "order events"], env=dict(os.environ), encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "Kafka" in (child.before or "")
    assert _wait(lambda: not service_running(str(store)), timeout=30), "the service did not exit when idle"
    # MNEMO_NO_SERVICE (and serve_idle_seconds = 0) keep the terminal's commands in-process
    monkeypatch.setenv("MNEMO_NO_SERVICE", "1")
    child = pexpect.spawn(MNEMO, ["save", "Nightly backups run at 03:00 UTC"], env=dict(os.environ), encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    time.sleep(1.5)
    assert not service_running(str(store))


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


def test_a_store_file_copied_over_is_reopened_not_corrupted(store: Path, tmp_path: Path) -> None:
    """`cp other.db memory.db` while the service runs keeps the inode: the service notices the
    new bytes before the next request, reopens the file and saves into the copied store; the
    old store's pages and log never mix into it."""
    import shutil

    import apsw
    from fake_embedder import FakeEmbedder

    root = tmp_path / "app"
    other = tmp_path / "other.db"
    with Mnemo(other, embedder=FakeEmbedder()) as m:  # another store with its own memories and log
        for i in range(40):  # more pages than the old store: a stale page cache would show
            m.remember(f"Kubernetes note {i}: the cluster runs deployment number {i} on Fridays", scope=project_scope(root))
        m.remember("We use MySQL 8 for the main database", type="decision", scope=project_scope(root))
        m.context("which database", scope=project_scope(root), session="other-session")
    env = {**os.environ, "MNEMO_SERVE_IDLE_SECONDS": "0"}  # a hook the service did not answer starts none
    proc = _serve(store, idle=60)
    try:
        def hook(session: str) -> str:
            served = request(str(store), {"op": "ping"})["served"]
            r = subprocess.run([MNEMO, "hook", "user-prompt", "--db", str(store)], input=_payload(root, session),
                               capture_output=True, text=True, timeout=60, env=env)
            assert r.returncode == 0, r.stderr
            assert request(str(store), {"op": "ping"})["served"] == served + 2, "not answered by the service"
            return r.stdout

        assert "PostgreSQL 16" in hook("before-copy")  # saved through the service: its injection log
        inode = os.stat(store).st_ino
        shutil.copyfile(other, store)  # what `cp other.db memory.db` does: same inode, new bytes
        assert os.stat(store).st_ino == inode
        out = hook("after-copy")
        assert "MySQL 8" in out and "PostgreSQL 16" not in out  # read from the copied store
        assert request(str(store), {"op": "ping"})["pid"] == proc.pid  # the same service, reopened
        request(str(store), {"op": "stop"})
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    conn = apsw.Connection(str(store), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert [r[0] for r in conn.execute("PRAGMA integrity_check")] == ["ok"]
        contents = [r[0] for r in conn.execute("SELECT content FROM memories")]
        sessions = {r[0] for r in conn.execute("SELECT session FROM injections")}
    finally:
        conn.close()
    assert "We use MySQL 8 for the main database" in contents and len(contents) == 41
    assert not any("PostgreSQL" in c for c in contents)
    assert "after-copy" in sessions and "other-session" in sessions and "before-copy" not in sessions
    with Mnemo(store, embedder=FakeEmbedder()) as m:
        assert m.store.integrity_problems() == [] and m.stats()["total"] == 41


def test_refresh_reopens_a_store_copied_over_it(tmp_path: Path) -> None:
    """The store's own check, as any long-running process uses it between requests."""
    import shutil

    from fake_embedder import FakeEmbedder

    a, b = tmp_path / "a.db", tmp_path / "b.db"
    with Mnemo(b, embedder=FakeEmbedder()) as m:
        m.remember("The queue is RabbitMQ")
    with Mnemo(a, embedder=FakeEmbedder()) as m:
        m.remember("The queue is Kafka")
        assert m.recall("queue")[0].memory.content == "The queue is Kafka"
        assert m.refresh() is False  # nothing changed: the store stays as it is
        assert m.refresh(idle=True) is False  # after a request: the log written back, the file let go
        assert not Path(f"{a}-wal").exists()
        assert m.recall("queue")[0].memory.content == "The queue is Kafka"  # opened again on first use
        m.refresh(idle=True)
        shutil.copyfile(b, a)
        assert m.refresh() is True
        assert [h.memory.content for h in m.recall("queue")] == ["The queue is RabbitMQ"]
        m.remember("The cache is Redis")
        assert m.refresh(idle=True) is False
        assert m.stats()["total"] == 2 and m.store.integrity_problems() == []
        m.refresh(idle=True)
        (tmp_path / "c.db").write_bytes(b"not a database at all, just some bytes" * 200)
        shutil.copyfile(tmp_path / "c.db", a)
        with pytest.raises(MnemoError):
            m.refresh()
    with Mnemo(b, embedder=FakeEmbedder()) as m:
        assert m.stats()["total"] == 1


def _cli(*args: str, cwd: Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_the_command_line_runs_frequent_commands_in_the_warm_service(store: Path, tmp_path: Path) -> None:
    """With a service up, `mnemo save/search/…` are run by it (the model stays loaded) exactly as
    they run here: the client's working folder (and so its project scope), settings, stdin and
    exit codes; and a command it took is never run a second time."""
    root = tmp_path / "app"
    proc = _serve(store, idle=60)
    try:
        before = request(str(store), {"op": "ping"})["served"]
        saved = _cli("save", "The cache TTL is 15 minutes", "--json", cwd=root)
        assert saved.returncode == 0, saved.stderr
        mem = json.loads(saved.stdout)["memory"]
        assert mem["scope"] == project_scope(root)  # the client's folder, not the service's
        piped = _cli("save", "-", "--json", cwd=root, stdin="The queue holds 500 jobs at most\n")
        assert piped.returncode == 0 and json.loads(piped.stdout)["memory"]["content"] == "The queue holds 500 jobs at most"
        found = _cli("--json", "search", "cache TTL", cwd=root)
        assert [h["id"] for h in json.loads(found.stdout)["results"]][:1] == [mem["id"]]
        assert _cli("show", "mem_nope_nope", cwd=root).returncode == 3  # not found: the same exit code
        elsewhere = _cli("--json", "recent", cwd=tmp_path, MNEMO_SCOPE="global")  # another folder, a setting
        assert all(x["scope"] == "global" for x in json.loads(elsewhere.stdout))
        served = request(str(store), {"op": "ping"})["served"] - before
        assert served == 6  # the five commands, and the first ping: every command went through the service
    finally:
        request(str(store), {"op": "stop"})
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    from fake_embedder import FakeEmbedder

    with Mnemo(store, embedder=FakeEmbedder()) as m:
        texts = [x.content for x in m.list(scope="all")]
    assert texts.count("The cache TTL is 15 minutes") == 1  # saved once


def test_without_a_service_the_command_line_runs_the_command_itself(store: Path, tmp_path: Path) -> None:
    r = _cli("save", "No service is running for this one", "--json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["action"] == "created"
    assert not service_running(str(store))  # and none was started for it


def _pending(store: Path, cwd: Path) -> int:
    res = _cli("--json", "stats", cwd=cwd, MNEMO_DB=str(store))
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["vectors_pending"] or 0)


def test_a_bulk_import_leaves_its_vectors_to_the_service(store: Path, tmp_path: Path) -> None:
    """`import --vectors later` returns once the text is in; the running service embeds the rest
    between requests and still answers them; with no service, the import starts one."""
    src = tmp_path / "bulk.jsonl"
    src.write_text("".join(json.dumps({"content": f"Runbook step {i}: restart the ingest worker w{i} after a deploy"}) + "\n"
                           for i in range(40)), "utf-8")
    proc = _serve(store, idle=60)
    try:
        res = _cli("--json", "import", str(src), "--vectors", "later", cwd=tmp_path, MNEMO_DB=str(store))
        assert res.returncode == 0, res.stderr
        report = json.loads(res.stdout)
        assert report["imported"] == 40 and report["vectors_pending"] == 40 and report["vectors_by"] == "service"
        found = _cli("--json", "search", "ingest worker w7", "--mode", "fts", cwd=tmp_path, MNEMO_DB=str(store))
        assert "w7 after" in json.loads(found.stdout)["results"][0]["content"]  # its words, at once
        assert _wait(lambda: _pending(store, tmp_path) == 0), "the service did not fill the vectors"
        assert request(str(store), {"op": "ping"})["served"] >= 3  # it kept answering meanwhile
    finally:
        request(str(store), {"op": "stop"})
        proc.communicate(timeout=30)
    # no service: an explicit `later` starts one, which fills what waits and stays until idle
    src.write_text("".join(json.dumps({"content": f"Alert rule {i}: page on-call when queue q{i} backs up"}) + "\n"
                           for i in range(10)), "utf-8")
    res = _cli("--json", "import", str(src), "--vectors", "later", cwd=tmp_path, MNEMO_DB=str(store),
               MNEMO_SERVE_IDLE_SECONDS="20")
    assert res.returncode == 0 and json.loads(res.stdout)["vectors_by"] == "service", res.stderr
    try:
        assert _wait(lambda: _pending(store, tmp_path) == 0), "the started service did not fill the vectors"
    finally:
        _wait(lambda: request(str(store), {"op": "stop"}) is not None, timeout=10)
        _wait(lambda: not service_running(str(store)), timeout=30)


@pytest.mark.parametrize("xdg", [None, "", "   ", "/srv/data"])
def test_the_home_found_without_platformdirs_is_the_one_platformdirs_gives(monkeypatch: pytest.MonkeyPatch, xdg: str | None) -> None:
    import platformdirs

    from mnemo._settings import config

    monkeypatch.delenv("MNEMO_HOME")
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert config.home_dir() == platformdirs.user_data_dir("mnemo", appauthor=False)
    assert config.home() == Path(platformdirs.user_data_dir("mnemo", appauthor=False))
    assert config.load({"db": None}, resolve_scope=False).db == os.path.join(config.home_dir(), "memory.db")


def test_the_hook_client_hands_the_scope_setting_over_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo._settings import config

    (tmp_path / "app" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "app")
    full, raw = config.load(), config.load(resolve_scope=False)
    assert full["scope"] == project_scope(tmp_path / "app") and raw["scope"] == "global"
    assert full.raw_scope == raw.raw_scope == ("global", "default")  # what the service resolves per payload
    monkeypatch.setenv("MNEMO_SCOPE", "project:x")
    assert config.load(resolve_scope=False).raw_scope == ("project:x", "MNEMO_SCOPE")


class _CountingThreads:
    """The fake model, recording the engine thread counts the service asks for."""

    def __init__(self) -> None:
        from fake_embedder import FakeEmbedder

        self.inner, self.asked = FakeEmbedder(), []

    def __getattr__(self, name: str):  # noqa: ANN204 - everything else is the fake model's
        return getattr(self.inner, name)

    def using_threads(self, n: int):  # noqa: ANN201
        from contextlib import nullcontext

        self.asked.append(n)
        return nullcontext()


@pytest.mark.parametrize("idle_threads", [True, False])
def test_the_service_embeds_each_request_on_the_cores_idle_then(tmp_path: Path, idle_threads: bool) -> None:
    from mnemo._hooks.service import Service
    from mnemo._recall.embed import idle_cores

    emb = _CountingThreads()
    with Mnemo(tmp_path / "s.db", embedder=emb) as m:
        m.remember("We use PostgreSQL 16 for the main database", type="decision")
        service = Service(m, str(tmp_path / "s.db"), idle_threads=idle_threads)
        reply = service.handle({"op": "hook", "event": "user-prompt", "settings": {},
                                "payload": json.loads(_payload(tmp_path, "s-threads"))})
        assert reply.get("exit", 0) == 0 and "PostgreSQL 16" in reply["stdout"]
        assert service.handle({"op": "ping"})["ok"]
    # one count per request that may embed (the ping asks for none), within the machine's cores
    assert len(emb.asked) == (1 if idle_threads else 0)
    assert all(1 <= n <= (os.cpu_count() or 1) for n in emb.asked) and idle_cores() >= 1
