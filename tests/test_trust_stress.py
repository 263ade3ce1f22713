"""A sample of bench/trust_stress.py on every run, through the real model: distinct templated notes
saved one by one and from several processes at once are all kept and all found (the bench runs
the issue's 1,000 notes and 16 processes)."""

from __future__ import annotations

import benchmod
import pytest

pytestmark = pytest.mark.model

stress = benchmod.load("trust_stress")


def test_the_notes_are_distinct_and_cover_every_template() -> None:
    texts = stress.notes(1000)
    assert len(set(texts)) == 1000 and {t for t in stress.TEMPLATES} and len(stress.TEMPLATES) == 20
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts) == 500  # half Chinese


def test_templated_notes_saved_one_by_one_are_all_kept_and_found(store_target: str) -> None:
    report = stress.sequential(store_target, "e5", 100)
    assert report["active"] == 100 and report["hidden"] == [] and report["not_found"] == []
    assert "merged" not in report["actions"] and "superseded" not in report["actions"]


@pytest.mark.slow
def test_templated_notes_from_several_processes_are_all_kept(store_target: str) -> None:
    report = stress.concurrent(store_target, "e5", 4, 10)
    assert report["active"] == report["notes"] == 40
    assert report["by_status"] == {"active": 41} and set(report["actions"]) <= {"created", "related"}
