"""A real ``mnemo web`` for tests: the command itself, in its own process, on a free port.

``start_web()`` runs ``mnemo web --no-browser --port 0`` with the test's settings (MNEMO_HOME,
MNEMO_DB on the PostgreSQL run, the model) and reads the address and the one-time login link
it prints. ``WebServer.api()`` calls the API with the bearer token (what a script does);
``login(page)`` logs a Playwright page in through the printed link (what a person does).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: the system Chromium (Debian's package; scripts/browser-setup installs it)
CHROMIUM = os.environ.get("MNEMO_TEST_CHROMIUM") or "/usr/bin/chromium"


@dataclass
class WebServer:
    """A running ``mnemo web``: its address, a login link, the API token, and its process."""

    url: str
    login_url: str
    token: str
    proc: subprocess.Popen[str]
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def api(self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None,
            raw: bytes | None = None, auth: bool = True) -> tuple[int, Any]:
        """``(status, decoded JSON)`` of one API call (path under /api/v1, query string included)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + "/api/v1" + path, data=data, method=method)
        if auth:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None and raw is None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            text = exc.read()
            try:
                return exc.code, json.loads(text)
            except ValueError:
                return exc.code, text.decode("utf-8", "replace")

    def fresh_login(self) -> str:
        """Another one-time login link for this server (``mnemo web`` again prints one)."""
        out = subprocess.run([sys.executable, "-m", "mnemo", "web", "--no-browser", "--json"], capture_output=True, text=True, timeout=60,
                             env=self.env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["login_url"]

    def login(self, page: Any) -> None:
        """Log a Playwright page in through a one-time link and wait for the app."""
        page.goto(self.fresh_login())
        page.wait_for_load_state("domcontentloaded")

    def stop(self) -> str:
        """Stop the server (SIGTERM, as Ctrl-C would); returns what it wrote to stderr since it started."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err or ""


def spawn_until(args: list[str], pattern: str, *, env: dict[str, str], timeout: float = 120) -> tuple[subprocess.Popen[str], re.Match[str]]:
    """Start ``args`` and read its stderr until a line matches ``pattern`` (a server saying where it listens)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return proc, found
    proc.kill()
    rest = proc.communicate()[1] if proc.poll() is not None else ""
    raise AssertionError(f"{' '.join(args[2:])} did not start:\n" + "".join(lines) + (rest or ""))


def start_web(*extra: str, env: dict[str, str] | None = None, timeout: float = 120) -> WebServer:
    """Start ``mnemo web --no-browser --port 0 EXTRA…`` and wait until it prints its login link."""
    args = [sys.executable, "-m", "mnemo", "web", "--no-browser", "--port", "0", *extra]
    env = {**os.environ, **(env or {})}
    proc, found = spawn_until(args, r"(https?://\S+/login\?t=\S+)", env=env, timeout=timeout)
    login = found.group(1)
    url = login.split("/login?", 1)[0]
    tok = subprocess.run([sys.executable, "-m", "mnemo", "web", "--token"], capture_output=True, text=True, timeout=60, env=env)
    assert tok.returncode == 0, tok.stderr
    return WebServer(url=url, login_url=login, token=tok.stdout.strip(), proc=proc, args=args, env=env)


@pytest.fixture
def web(mnemo_home: Path) -> Any:
    """A ``mnemo web`` on this test's store (the fake model; MNEMO_DB on the PostgreSQL run)."""
    server = start_web()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def web_real(mnemo_home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A ``mnemo web`` with the bundled e5 model (searches across languages as shipped)."""
    monkeypatch.setenv("MNEMO_MODEL", "e5")
    server = start_web()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Any:
    """The system Chromium, headless, driven by Playwright (a missing browser fails: scripts/browser-setup)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: run scripts/browser-setup (MNEMO_TEST_CHROMIUM names another)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def artefacts(request: pytest.FixtureRequest) -> Path:
    """Where a browser test keeps its screenshots: test-artefacts/web/ in the repository (ignored by git)."""
    folder = Path(__file__).resolve().parent.parent / "test-artefacts" / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
