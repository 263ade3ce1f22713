"""kill -9 inside `mnemo encrypt`, `decrypt` and `rekey`: a sample of bench/conversion_kills.py.

Each command runs as a real subprocess that dies (``os._exit``) just before a chosen line of the
conversion code: two points before the store's swap (the commit point), the swap itself and two
after it. Then, with the key the user has (the key file): `mnemo stats` counts every memory,
`mnemo export` returns every memory's text, no file but a plaintext store and its backups holds
memory text, doctor's leftovers check says nothing, and running the command again finishes it.
The full run (random instants and a denser sweep) is ``python bench/conversion_kills.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import conversion_kills as kills

pytestmark = pytest.mark.sqlite_only  # encryption at rest is a property of the SQLite file

MEMORIES = 40


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return kills.build(tmp_path_factory.mktemp("templates"), MEMORIES)


@pytest.fixture(scope="module")
def texts(templates: dict[str, Path]) -> set[str]:
    found = kills.expected_texts(templates["plain"])
    assert len(found) == MEMORIES
    return found


def _points(total: int, commit: int) -> list[int]:
    return sorted({max(1, commit // 3), max(1, commit * 5 // 6), commit, commit + 1 + (total - commit) // 3, total - 1})


@pytest.mark.parametrize("command", kills.COMMANDS)
def test_killed_at_five_points_nothing_is_lost_and_no_plaintext_is_left(command: str, templates: dict[str, Path], texts: set[str],
                                                                        tmp_path: Path) -> None:
    home = tmp_path / "home"
    import shutil

    shutil.copytree(templates[kills.start(command)], home)
    total, commit = kills.count_lines(home, command)
    assert 0 < commit < total
    states = []
    for k in _points(total, commit):
        died: list[bool] = []
        state, problems = kills.trial(templates, tmp_path, command, texts, lambda h, died=died, k=k: died.append(kills.run_killed_at_line(h, command, k)))
        assert died == [True], f"`mnemo {command}` did not reach line {k} of {total}"
        assert problems == [], f"`mnemo {command}` killed before line {k} of {total} (swap at {commit}): {problems}"
        states.append(state)
    assert set(states) == {"before", "after"}, states  # the kills landed on both sides of the store's swap
