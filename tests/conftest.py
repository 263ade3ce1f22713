"""Shared fixtures: a temporary mnemo home per test, the fake embedder, a CLI runner."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_embedder import FakeEmbedder  # noqa: E402

from mnemo import Mnemo  # noqa: E402

FAKE_MODEL = "plugin:fake_embedder:FakeEmbedder"

# ---------------------------------------------------------------- backend selection
# The whole suite runs against SQLite by default and against PostgreSQL when MNEMO_TEST_DB
# names a server (scripts/pg-setup prints one; scripts/test sets it for the second run). With
# PostgreSQL, every test gets a fresh database cloned from the template (extensions only, no
# mnemo schema: `mnemo init` and the migrations run as for a new SQLite file). Tests about
# SQLite files themselves are marked `sqlite_only` and left out of the PostgreSQL run.
PG_SERVER = os.environ.get("MNEMO_TEST_DB", "")
PG_TEMPLATE = os.environ.get("MNEMO_TEST_TEMPLATE", "mnemo_template")
BACKEND = "postgres" if PG_SERVER else "sqlite"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pg_url(database: str, *, user: str | None = None) -> str:
    """The test server's URL for ``database`` (optionally as another role)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(PG_SERVER)
    netloc = parts.netloc
    if user is not None:
        netloc = user + netloc[netloc.index("@"):] if "@" in netloc else f"{user}@{netloc}"
    return urlunsplit((parts.scheme, netloc, "/" + database, parts.query, ""))


def pg_admin() -> Any:
    """An autocommit connection to the test server's maintenance database, or a skip (a
    failure in CI) when there is no server."""
    if not PG_SERVER:
        message = ("PostgreSQL tests need a server: run scripts/pg-setup and set MNEMO_TEST_DB to the URL it prints "
                   "(scripts/test does both)")
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    import psycopg

    try:
        return psycopg.connect(pg_url("postgres"), autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        message = f"cannot reach the PostgreSQL test server {PG_SERVER}: {exc}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


class PgDatabases:
    """Fresh databases from the template for one test, dropped after it."""

    def __init__(self) -> None:
        self.conn = pg_admin()
        self.names: list[str] = []

    def new(self, *, template: str | None = None, owner: str | None = None) -> str:
        import uuid

        name = f"t_{uuid.uuid4().hex[:16]}"
        extra = f" OWNER {owner}" if owner else ""
        self.conn.execute(f"CREATE DATABASE {name} TEMPLATE {template or PG_TEMPLATE}{extra}")
        self.names.append(name)
        return name

    def url(self, **kw: Any) -> str:
        return pg_url(self.new(**kw))

    def reopen(self) -> None:
        """A new admin connection (after a server restart in a test)."""
        self.conn.close()
        for _ in range(40):
            try:
                self.conn = pg_admin()
                return
            except BaseException:
                time.sleep(0.25)
        self.conn = pg_admin()

    def close(self) -> None:
        if self.conn.broken or self.conn.closed:
            self.reopen()
        try:
            for name in self.names:
                self._drop(name)
        finally:
            self.conn.close()

    def _drop(self, name: str) -> None:
        import psycopg

        # a backend that is just starting or ending in the database (autovacuum, a CLI
        # subprocess's connection) can make one attempt fail; a few tries ride that out
        for attempt in range(5):
            try:
                self.conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                return
            except psycopg.errors.ObjectInUse:
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))


@pytest.fixture
def pg_databases():
    """A factory of fresh PostgreSQL databases (skips, or fails in CI, without a server)."""
    dbs = PgDatabases()
    yield dbs
    dbs.close()


#: test modules that run on SQLite only: the warm service's tests check its lock and socket
#: beside a store file, and the OpenCode tests start OpenCode, whose plugin process is given a
#: file store (the hooks and install tests run on both backends)
FILE_KEYED_MODULES = set(os.environ.get("MNEMO_TEST_FILE_KEYED", "test_serve,test_opencode").split(",")) - {""}


#: test modules that open no store at all (rules, redaction, docs, layering): the same run on both
#: backends, so the PostgreSQL run leaves them to the SQLite run (each test there would create
#: a database it never uses: 796 such tests took 142 s on PostgreSQL against 15 s)
BACKEND_FREE_MODULES = frozenset({"test_bench_data", "test_conflict", "test_docs", "test_pairs", "test_redact", "test_redteam",
                                  "test_timeparse", "test_layers", "test_surfaces", "test_text", "test_detect_model"})


def _sqlite_only(node: Any) -> bool:
    return bool(node.get_closest_marker("sqlite_only")) or getattr(getattr(node, "module", None), "__name__", "") in FILE_KEYED_MODULES


#: which of scripts/test's two runs this is ("sqlite", "postgres"), or "" for a plain pytest
TEST_RUN = os.environ.get("MNEMO_TEST_RUN", "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The SQLite run leaves PostgreSQL-only tests to the PostgreSQL run, which leaves out the
    tests about SQLite files, the browser tests and the modules that open no store; a plain local pytest without a server skips the PostgreSQL tests
    with a message saying how to get one (in CI that is a failure, never a skip)."""
    keep, drop = [], []
    for item in items:
        pg_only, sqlite_only = item.get_closest_marker("postgres"), _sqlite_only(item)
        # the browser tests are about the page, not the backend: once, on the SQLite run (the
        # API under them runs on both backends in test_web_api)
        sqlite_only = sqlite_only or bool(item.get_closest_marker("browser"))
        sqlite_only = sqlite_only or getattr(getattr(item, "module", None), "__name__", "") in BACKEND_FREE_MODULES
        if (TEST_RUN == "sqlite" and pg_only) or (BACKEND == "postgres" and sqlite_only):
            drop.append(item)
            continue
        if pg_only and BACKEND != "postgres" and not IN_CI:
            item.add_marker(pytest.mark.skip(reason="PostgreSQL test: run scripts/pg-setup and set MNEMO_TEST_DB to the URL it prints (scripts/test does both)"))
        keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_report_header(config: pytest.Config) -> str:
    return f"mnemo store backend: {BACKEND}" + (f" ({PG_SERVER})" if PG_SERVER else "")


@pytest.fixture
def store_target(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where this test's store lives: a file in tmp_path, or a fresh PostgreSQL database."""
    if BACKEND == "postgres" and not _sqlite_only(request.node):
        return request.getfixturevalue("pg_databases").url()
    return str(tmp_path / "store.db")


@pytest.fixture(autouse=True)
def mnemo_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    """Every test gets its own MNEMO_HOME, the fake model by default, and no stray MNEMO_* settings
    (on the PostgreSQL run, MNEMO_DB is a fresh database, so the CLI's default store is one)."""
    for key in list(os.environ):
        if key.startswith("MNEMO_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("MNEMO_HOME", str(home))
    # what mnemo derives once per machine (the dictionary's table: ~2 s to build) is shared by the
    # session's tests, as by a user's processes; test_dictionary.py tests the cache itself
    monkeypatch.setenv("MNEMO_CACHE_DIR", str(request.getfixturevalue("tmp_path_factory").getbasetemp() / "mnemo-cache"))
    if BACKEND == "postgres" and not _sqlite_only(request.node):
        monkeypatch.setenv("MNEMO_DB", request.getfixturevalue("store_target"))
    monkeypatch.setenv("MNEMO_MODEL", FAKE_MODEL)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    # outside any git project: the scope is then the configured one (or global), as on a fresh machine
    monkeypatch.chdir(request.getfixturevalue("tmp_path_factory").mktemp("cwd"))
    return home


def default_store() -> str:
    """The store the CLI and the hooks use when no --db is given: MNEMO_DB (a database on the
    PostgreSQL run) or memory.db in the mnemo home."""
    return os.environ.get("MNEMO_DB") or str(Path(os.environ["MNEMO_HOME"]) / "memory.db")


@pytest.fixture
def default_db(mnemo_home: Path) -> str:
    """:func:`default_store` as a fixture (after ``mnemo_home`` has set the environment)."""
    return default_store()


@pytest.fixture
def m(store_target: str) -> Mnemo:
    store = Mnemo(store_target, embedder=FakeEmbedder())
    yield store
    store.close()


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run ``mnemo ARGS`` in-process; returns exit code, stdout, stderr."""
    from mnemo._entry import main

    def run(*args: str, stdin: str | bytes | None = None) -> Result:
        if stdin is not None:
            import io

            data = stdin.encode() if isinstance(stdin, str) else stdin
            fake = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
            monkeypatch.setattr(sys, "stdin", fake)
        capsys.readouterr()
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def chat() -> Iterator[Any]:
    """A local OpenAI-compatible chat endpoint (``fake_embedder.ChatEndpoint``) for the LLM paths."""
    from fake_embedder import ChatEndpoint

    ep = ChatEndpoint()
    yield ep
    ep.close()


def chat_store(tmp_path: Path, ep: Any, model: str, timeout: float = 20.0) -> Mnemo:
    """A file store whose LLM is the local endpoint ``ep``."""
    from mnemo._llm.chat import ChatClient

    return Mnemo(tmp_path / "s.db", embedder=FakeEmbedder(), chat=ChatClient(ep.url, model, timeout=timeout))
