"""The second red-team set (tests/data/redteam_v2_*.jsonl): zero leaks, at most 1 % look-alikes
altered, on the tuning part and on the held-out part alike.

Scoring is the benchmark's (``bench/redteam.py``): a secret leaks when its substring, or for a
number its digits with separators dropped, is still in the redacted text; a look-alike is a false
positive when redaction changes its text at all. Redactor only, no store, so it is fast.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import benchmod
import pytest

from mnemo._privacy.redact import Redactor

DATA = Path(__file__).parent / "data"
PARTS = {"tune": DATA / "redteam_v2_tune.jsonl", "heldout": DATA / "redteam_v2_heldout.jsonl"}
BENCH = Path(__file__).parents[1] / "bench" / "redteam.py"
MAX_FP_RATE = 0.01


def _bench() -> ModuleType:
    """bench/redteam.py (bench/ is not a package)."""
    return benchmod.load("redteam")


@lru_cache(maxsize=2)
def _rows(part: str) -> tuple[dict[str, Any], ...]:
    with PARTS[part].open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def test_v2_set_shape() -> None:
    rows = _rows("tune") + _rows("heldout")
    secrets = [r for r in rows if r["secret"]]
    lookalikes = [r for r in rows if not r["secret"]]
    assert len(secrets) >= 320 and len(lookalikes) >= 320
    assert len({r["text"] for r in rows}) == len(rows), "a text in both parts (or twice)"
    for r in secrets:
        assert r["secret"] in r["text"], r
    # about a third held out
    assert 0.3 <= len(_rows("heldout")) / len(rows) <= 0.37


def test_leak_rule() -> None:
    leaked = _bench().leaked
    assert leaked("138 0013 8000", "call 13800138000")  # separators do not hide a number
    assert leaked("138\u200b0013\u200b8000", "call 138-0013-8000")
    assert not leaked("138 0013 8000", "call [PHONE]")
    assert leaked("hunter2!", "pw hunter2!") and not leaked("hunter2!", "pw [SECRET]")


@pytest.mark.parametrize("part", sorted(PARTS))
def test_v2_zero_leaks_and_few_false_positives(part: str) -> None:
    redactor = Redactor()
    res = _bench().score(list(_rows(part)), lambda t: redactor.redact(t).text)
    for what, kind, out in res["errors"]:
        print(what, kind, repr(out))
    assert res["leaks"] == 0, f"{res['leaks']} leaks in {part}"
    assert res["fp"] <= MAX_FP_RATE * res["lookalikes"], f"{res['fp']} false positives in {part}"


@pytest.mark.parametrize("text", [
    "耗时 15000000000 纳秒", "took 13800138000 ns", "订单号 6222021234567890128", "运单号 4111111111111111",
    "验证码 60 秒后重发", "I forgot the password to the router", "sshpass -p \"$SSHPASS\" ssh host",
    "look at example.com for details", "trace 0f6e1f4a-2b3c-4d5e-8f90-1a2b3c4d5e6f took 12ms",
])
def test_lookalikes_from_the_issue_survive(text: str) -> None:
    assert Redactor().redact(text).text == text
