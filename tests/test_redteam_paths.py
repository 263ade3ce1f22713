"""The end-to-end red team (``bench/redteam_paths.py``) on a sample: secrets pushed through every
way text enters mnemo (save, stdin, tags/source, edit, import with metadata, ingest of notes,
folders of named files, chat exports and web pages, auto text/stdin/transcripts, context, hooks
through the warm service, MCP over stdio, the LLM extractor), then every file of the home, every
table and every request the LLM endpoint received scanned: 0 leaks, every path stored its
canaries, at most 1 % of look-alikes altered. The bench runs every secret of the set.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import benchmod
import pytest

BENCH = Path(__file__).parents[1] / "bench" / "redteam_paths.py"
pytestmark = pytest.mark.sqlite_only  # scans a store file's bytes


def _bench() -> ModuleType:
    return benchmod.load("redteam_paths")


def test_a_sample_of_secrets_leaks_through_no_path() -> None:
    bench = _bench()
    report = bench.run(sample=24, seed=20261201, log=print)
    assert set(report["paths"]) == set(bench.PATHS)
    assert report["leaks"] == [], report["leaks"][:5]
    for name, path in report["paths"].items():
        # capture keeps only what is worth keeping, and context logs a prompt only when it injects
        assert path["canaries"] >= report["secrets"] // 3, (name, path)
    assert report["llm_requests"] > 0
    assert len(report["altered"]) <= bench.MAX_FP_RATE * 2 * report["lookalikes"], report["altered"]


def test_the_scan_finds_a_secret_that_was_stored(tmp_path: Path) -> None:
    """The scan itself can fail: a secret written raw into a table, or as a number with other
    separators, is found; the store's own timestamps do not make a six-digit code "leak"."""
    bench = _bench()
    found = bench.find_leaks([{"kind": "otp_code", "secret": "389587"}, {"kind": "phone_cn", "secret": "138 0013 8000"},
                              {"kind": "password_prose", "secret": "Winter_56454*"}],
                             {"table memories": "电话 138-0013-8000，密码 Winter_56454*".encode(),
                              "home/memory.db": b"\x00\x01created 2026-12-01T23:03:48.389587+00:00\x00"})
    assert {(x["secret"], x["where"]) for x in found} == {("138 0013 8000", "table memories"), ("Winter_56454*", "table memories")}
    assert bench.find_leaks([{"kind": "otp_code", "secret": "0422"}], {"a": "你的验证码是0422".encode()})
