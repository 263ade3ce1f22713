"""Shared fixtures: a temporary mnemo home per test, the fake embedder, a CLI runner."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_embedder import FakeEmbedder  # noqa: E402

from mnemo import Mnemo  # noqa: E402

FAKE_MODEL = "plugin:fake_embedder:FakeEmbedder"


@pytest.fixture(autouse=True)
def mnemo_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own MNEMO_HOME, the fake model by default, and no stray MNEMO_* settings."""
    for key in list(os.environ):
        if key.startswith("MNEMO_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("MNEMO_HOME", str(home))
    monkeypatch.setenv("MNEMO_MODEL", FAKE_MODEL)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    return home


@pytest.fixture
def m(tmp_path: Path) -> Mnemo:
    store = Mnemo(tmp_path / "store.db", embedder=FakeEmbedder())
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
    from mnemo.cli import main

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
