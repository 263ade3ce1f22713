"""Dump what each earlier pass of the capture rules detected on the splits it had not been tuned
on, as training data for the second stage (``bench/train_capture.py``).

    python bench/capture_passes.py      # writes bench/data/capture_passes.jsonl

Rules tuned on a split are nearly right on it, so their mistakes there are few and unlike the
mistakes they make on new text. Each earlier pass, run on the splits written after it, makes the
mistakes of first exposure: that is what the second stage has to learn to catch. Every pass is
checked out with ``git worktree`` (the rules are code and data together) and run on the current
label files. Splits ``j`` and later are never dumped: they stay held out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "data" / "capture_passes.jsonl"

#: (commit of a pass, the splits written after it that it was not tuned on)
PASSES = (
    ("fcc07c7", "cdefghi"),  # second pass, tuned on a and b
    ("92b89ce", "defghi"),
    ("f835d17", "efghi"),
    ("1c5360f", "fghi"),
    ("195e440", "ghi"),
    ("12eaf16", "hi"),
    ("207a678", "i"),
)

_RUN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from mnemo._capture.detect import detect
for line in sys.stdin:
    row = json.loads(line)
    found = detect(row["text"], role=row.get("role", "user"))
    print(json.dumps({"id": row["id"], "found": [[d.start, d.end, d.type, d.confidence, d.rule, d.explicit] for d in found]}))
"""


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from detect import load_split  # noqa: PLC0415

    rows = {key: load_split(key) for key in "cdefghi"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as out, tempfile.TemporaryDirectory() as tmp:
        for commit, splits in PASSES:
            tree = Path(tmp) / commit
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), commit], check=True)
            try:
                todo = "".join(json.dumps(r, ensure_ascii=False) + "\n" for key in splits for r in rows[key])
                res = subprocess.run([sys.executable, "-c", _RUN, str(tree / "src")], input=todo, text=True,
                                     capture_output=True, check=True)
                for line in res.stdout.splitlines():
                    row = json.loads(line)
                    if row["found"]:  # a row with nothing detected teaches the second stage nothing
                        out.write(json.dumps(dict(row, rules=commit)) + "\n")
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)
            print(f"{commit}: {splits}", file=sys.stderr)


if __name__ == "__main__":
    main()
