"""kill -9 inside `mnemo save`, `import`, `ingest`, `reindex`, `purge` and `serve`: a sample of bench/kills.py.

Each command runs as a real subprocess (the fake embedder) and gets SIGKILL at three instants
spread over its measured run after start-up (20 %, 50 % and 85 % of the way from the store's open
to the end). Then: every save that printed its result is in the store; imports and ingests leave
whole batches with their index; purged ids are gone after the rerun and no file of the home
holds their text; hooks keep answering when the service dies and a new service starts; the store
opens and doctor fails no check the starting store did not; and the rerun finishes the job. The
checks and reruns run in this process to keep it short. The full run (30 random instants per
command) is ``python bench/kills.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import kills

pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]  # the files of a SQLite store; ~40-60 s in all

FRACTIONS = (0.2, 0.5, 0.85)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, set[str]]]:
    return kills.prepare(tmp_path_factory.mktemp("kills"), 40)


@pytest.mark.parametrize("command", kills.COMMANDS)
def test_killed_at_three_instants_nothing_acknowledged_is_lost(command: str, prepared: tuple[dict[str, Any], dict[str, set[str]]],
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kills, "IN_PROCESS", True)
    data, baseline = prepared
    trial = kills.Trial(data, tmp_path / "work", baseline, kills.random.Random(command))
    trial.saves, trial.hooks = 3, 4
    run_s, open_s = kills.measure(trial, command, runs=1)
    start = min(open_s, run_s * 0.5)
    landed = 0
    for n, f in enumerate(FRACTIONS):
        delay = start + (run_s - start) * f
        alive, problems = trial.run(command, delay, f"t{n}")
        landed += alive
        problems = {k: v for k, v in problems.items() if not k.startswith("note:")}
        assert problems == {}, f"`mnemo {command}` killed after {delay:.2f}s of a {run_s:.2f}s run: {problems}"
    assert landed >= 1, f"no kill of `mnemo {command}` landed while it ran (run {run_s:.2f}s)"


@pytest.mark.parametrize("point", list(kills.PURGE_POINTS))
def test_purge_killed_after_its_commit_leaves_no_text_once_the_store_is_opened(point: str, prepared: tuple[dict[str, Any], dict[str, set[str]]],
                                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kills, "IN_PROCESS", True)
    data, baseline = prepared
    trial = kills.Trial(data, tmp_path / "work", baseline, kills.random.Random(point))
    died, problems = trial.run("purge", None, "p", point)
    assert died, f"`mnemo purge` did not reach the line {point}"
    problems = {k: v for k, v in problems.items() if not k.startswith("note:")}
    assert problems == {}, f"`mnemo purge` killed {point}: {problems}"
