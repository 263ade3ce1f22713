"""The fuzz suite at full size: tests/test_fuzz.py with 10,000+ cases over the API, CLI and MCP.

CI runs a sample of the same tests (MNEMO_FUZZ_CASES, 120 per surface by default); this runs
4,500 per surface for the API and the CLI and a quarter of that through the real MCP client,
then prints what Hypothesis reports for each (passing, failing, invalid draws, runtimes).

    python bench/fuzz.py [--cases 4500] [--backend sqlite|postgres]

The contract it checks: no traceback, no exception outside MnemoError, no call over 30 s.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=4500, help="examples per surface (MCP gets a quarter)")
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    args = ap.parse_args()
    env = dict(os.environ, MNEMO_FUZZ_CASES=str(args.cases), MNEMO_TEST_RUN=args.backend)
    if args.backend == "postgres" and not env.get("MNEMO_TEST_DB"):
        env["MNEMO_TEST_DB"] = subprocess.run([str(ROOT / "scripts/pg-setup")], capture_output=True, text=True, check=True).stdout.strip()
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py",
                          "--hypothesis-show-statistics"], cwd=ROOT, env=env, capture_output=True, text=True)
    out = run.stdout + run.stderr
    total = 0
    print(f"fuzz, {args.backend}, {args.cases} cases per surface (MCP {max(10, args.cases // 4)}):")
    for name, passing, failing, invalid in re.findall(
            r"test_fuzz\.py::(\w+):.*?(\d+) passing, (\d+) failing, and (\d+) invalid", out, re.S):
        total += int(passing) + int(failing)
        print(f"  {name}: {passing} passing, {failing} failing ({invalid} draws discarded by the strategy, not counted)")
    print(f"  {total} cases in {time.monotonic() - started:.0f} s; pytest exit {run.returncode}")
    if run.returncode:
        print(out[-6000:])
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
