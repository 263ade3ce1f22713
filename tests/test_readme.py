"""The README's console session, run as written against a fresh store with the bundled model: its
shown output must be what mnemo prints (ids, dates and the home folder masked). When the code
changes what these commands print, this test fails until the README shows it again."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MNEMO = str(Path(sys.executable).with_name("mnemo"))
#: what differs from run to run: ids, dates and times, the store's folder
_MASKS = [(re.compile(r"mem_[0-9a-f]{8}(?:_\d{8}_\d{6})?"), "mem_ID"), (re.compile(r"\d{4}-\d\d-\d\d(?:T\d\d:\d\d:\d\dZ)?"), "DATE")]


def sessions() -> list[list[tuple[str, list[str]]]]:
    """Each ```console block of the README as (command, its output lines)."""
    text = (ROOT / "README.md").read_text("utf-8")
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        out.append(steps)
    return out


def _mask(text: str, home: str) -> str:
    text = text.replace(home, "~/.local/share/mnemo")
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


@pytest.mark.model
@pytest.mark.sqlite_only
def test_the_readme_console_session_prints_what_it_shows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(home), COLUMNS="100", MNEMO_NO_SERVICE="1", NO_COLOR="1")
    blocks = sessions()
    assert blocks, "the README has no console session"
    for steps in blocks:
        for command, shown in steps:
            args = shlex.split(command)
            assert args[0] == "mnemo", f"a README console line that is not mnemo: {command}"
            r = subprocess.run([MNEMO, *args[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, (command, r.stderr)
            assert _mask(r.stdout, str(home)) == _mask("\n".join(shown), str(home)), f"README drifted at `{command}`"
