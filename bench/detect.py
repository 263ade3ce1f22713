"""Capture benchmark: the rule detector and its second stage against the hand-labelled sets
``tests/data/capture_eval*.jsonl``.

    python bench/detect.py            # every split: rules alone, rules + second stage; latency
    python bench/detect.py --errors j # also list the misses and false alarms of split j
    python bench/detect.py --json out.json

The rules were first tuned on split a with b held out, then on a and b together. Split c
(``tests/data/capture_eval_c.jsonl``, 220 utterances written later by someone who had seen neither
the rules nor splits a and b) was held out until the third pass. Splits d to k
(``capture_eval_d.jsonl`` … ``capture_eval_k.jsonl``, 320 utterances each) were each written by
two people following the labelling guide ``docs/capture.md``, blind to the rules and to the
earlier splits; d to h were each held out for one pass of the rules and tuned on in the next.
Split p (``capture_eval_p.jsonl``, 300 utterances) is the opposite of the others: short, plain
messages, one statement each, the kind people type most, written the same way. The rules were
never tuned on i, p, j or k. The second stage (``src/mnemo/_capture/detect_model.py``, trained by
``bench/train_capture.py``) is trained on a to i and p; j and k are held out from both stages:
their rows are the honest estimate on new text. The types of a, b and c were
relabelled by a third person following the guide, blind to the detector (the old and new labels
agreed on 90% of the 374 memories).

Each line of the set is one utterance with the memories a person would keep (type + a verbatim
span of the text) or none. Matching rule: a detected memory matches an expected one when their
character spans in the utterance overlap by at least half of the shorter span (``OVERLAP``);
each expected memory is matched at most once, greedily by overlap. Then, micro-averaged over
the split: precision = matched / detected, recall = matched / expected, F1; type accuracy =
matched pairs whose type agrees / matched pairs (per expected type and overall). Latency is
the detector's time per utterance (tables and model already loaded), median and p95 of several
runs, with and without the second stage.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mnemo._capture.detect import detect  # noqa: E402

DATA = ROOT / "tests" / "data" / "capture_eval.jsonl"
#: splits a and b share ``DATA``; every later split has a file of its own, in the order written
LATER_SPLITS = ("c", "d", "e", "f", "g", "h", "i", "p", "j", "k")
#: the newest splits, which neither stage has been trained or tuned on
HELD_OUT = ("j", "k")
#: share of the shorter span two spans must share to count as the same memory
OVERLAP = 0.5
TARGETS = {"precision": 0.9, "recall": 0.7, "type_accuracy": 0.8, "median_ms": 1.0}


def load(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _span(text: str, content: str) -> tuple[int, int]:
    at = text.find(content)
    if at < 0:
        raise ValueError(f"expected content {content!r} is not a substring of {text!r}")
    return at, at + len(content)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / max(1, min(a[1] - a[0], b[1] - b[0]))


def match(row: dict[str, Any], found: list[Any]) -> tuple[list[tuple[dict[str, Any], Any]], list[Any], list[dict[str, Any]]]:
    """(matched pairs (expected, detection), unmatched detections, unmatched expected)."""
    expected = [(e, _span(row["text"], e["content"])) for e in row["expected"]]
    pairs = sorted(
        ((_overlap(span, (d.start, d.end)), i, j) for i, (_, span) in enumerate(expected) for j, d in enumerate(found)),
        reverse=True,
    )
    used_e: set[int] = set()
    used_d: set[int] = set()
    matched = []
    for ov, i, j in pairs:
        if ov < OVERLAP or i in used_e or j in used_d:
            continue
        used_e.add(i)
        used_d.add(j)
        matched.append((expected[i][0], found[j]))
    return matched, [d for j, d in enumerate(found) if j not in used_d], [e for i, (e, _) in enumerate(expected) if i not in used_e]


def evaluate(rows: list[dict[str, Any]], second_stage: bool = True,
             find: Callable[[dict[str, Any]], list[Any]] | None = None) -> dict[str, Any]:
    """Precision, recall, F1 of "worth remembering" and type accuracy over ``rows`` (with or
    without the detector's second stage; ``find(row)``, when given, supplies the detections
    instead, as ``bench/train_capture.py`` does for earlier passes of the rules)."""
    tp = fp = fn = 0
    typed: Counter[str] = Counter()
    typed_ok: Counter[str] = Counter()
    errors: list[dict[str, Any]] = []
    for row in rows:
        found = find(row) if find is not None else detect(row["text"], role=row.get("role", "user"), second_stage=second_stage)
        matched, extra, missed = match(row, found)
        tp, fp, fn = tp + len(matched), fp + len(extra), fn + len(missed)
        for exp, det in matched:
            typed[exp["type"]] += 1
            typed_ok[exp["type"]] += exp["type"] == det.type
            if exp["type"] != det.type:
                errors.append({"id": row["id"], "kind": "type", "text": row["text"], "expected": exp["type"], "got": det.type, "content": det.content})
        errors += [{"id": row["id"], "kind": "false alarm", "text": row["text"], "got": d.type, "content": d.content} for d in extra]
        errors += [{"id": row["id"], "kind": "missed", "text": row["text"], "expected": e["type"], "content": e["content"]} for e in missed]
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "utterances": len(rows), "expected": tp + fn, "detected": tp + fp, "matched": tp,
        "precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
        "type_accuracy": round(sum(typed_ok.values()) / max(1, sum(typed.values())), 3),
        "type_accuracy_by_type": {t: round(typed_ok[t] / typed[t], 3) for t in sorted(typed)},
        "errors": errors,
    }


def latency(rows: list[dict[str, Any]], runs: int = 5, second_stage: bool = True) -> dict[str, float]:
    """Per-utterance time of the detector (ms): median and p95 over ``runs`` passes."""
    for row in rows:  # load and compile the tables first: that is a one-time cost
        detect(row["text"], role=row.get("role", "user"), second_stage=second_stage)
    times = []
    for _ in range(runs):
        for row in rows:
            t0 = time.perf_counter()
            detect(row["text"], role=row.get("role", "user"), second_stage=second_stage)
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"median_ms": round(statistics.median(times), 4), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 4)}


def load_split(key: str) -> list[dict[str, Any]]:
    """The utterances of split ``key`` (``a`` to ``k``, ``p``)."""
    if key in ("a", "b"):
        return [r for r in load() if r["split"] == key]
    return [dict(r, split=key) for r in load(DATA.with_name(f"capture_eval_{key}.jsonl"))]


def load_all() -> list[dict[str, Any]]:
    """Every split."""
    return load() + [r for key in LATER_SPLITS for r in load_split(key)]


SPLITS = {key: f"{key} ({'held out' if key in HELD_OUT else 'trained on'})" for key in ("a", "b", *LATER_SPLITS)}
TUNED = "trained on, together"
HELD = "held out, together"


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores per split, for the tuned-on splits together, and the latency."""
    out: dict[str, Any] = {}
    parts = [(name, [r for r in rows if r["split"] == key]) for key, name in SPLITS.items()]
    parts.append((TUNED, [r for r in rows if r["split"] not in HELD_OUT]))
    parts.append((HELD, [r for r in rows if r["split"] in HELD_OUT]))
    for name, part in parts:
        if not part:
            continue
        out[name] = evaluate(part)
        out[name]["rules"] = {k: v for k, v in evaluate(part, second_stage=False).items() if k != "errors"}
        for lang in ("zh", "en"):
            out[name]["by_lang_" + lang] = {k: v for k, v in evaluate([r for r in part if r.get("lang") == lang]).items()
                                            if k in ("precision", "recall", "f1", "type_accuracy")}
    out["latency"] = latency(rows)
    out["latency_rules"] = latency(rows, second_stage=False)
    return out


def _table(res: dict[str, Any]) -> str:
    names = [n for n in res if not n.startswith("latency")]
    lines = ["| split | utterances | rules alone: P / R / type | with second stage: precision | recall | F1 (zh / en) | type accuracy |",
             "|---|---|---|---|---|---|---|"]
    for n in names:
        r, ru = res[n], res[n]["rules"]
        lines.append(f"| {n} | {r['utterances']} | {ru['precision']:.3f} / {ru['recall']:.3f} / {ru['type_accuracy']:.3f} | "
                     f"{r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} ({r['by_lang_zh']['f1']:.3f} / {r['by_lang_en']['f1']:.3f}) | "
                     f"{r['type_accuracy']:.3f} |")
    types = sorted({t for n in names for t in res[n]["type_accuracy_by_type"]})
    lines += ["", "| type accuracy by type | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for t in types:
        lines.append(f"| {t} | " + " | ".join(f"{res[n]['type_accuracy_by_type'].get(t, float('nan')):.2f}" for n in names) + " |")
    lat, rules = res["latency"], res["latency_rules"]
    lines += ["", f"Latency per utterance: median {lat['median_ms']:.3f} ms, p95 {lat['p95_ms']:.3f} ms "
              f"(rules alone: median {rules['median_ms']:.3f} ms, p95 {rules['p95_ms']:.3f} ms)."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--errors", choices=[*SPLITS, "all"], help="list the errors of this split (all: the trained-on splits together)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = ap.parse_args()
    res = report(load_all())
    print(_table(res))
    print(f"\ntargets: precision ≥ {TARGETS['precision']}, recall ≥ {TARGETS['recall']}, "
          f"type accuracy ≥ {TARGETS['type_accuracy']}, median ≤ {TARGETS['median_ms']} ms (with the second stage)")
    if args.errors:
        key = SPLITS.get(args.errors, TUNED)
        for e in res.get(key, {"errors": []})["errors"]:
            print(f"{e['id']:8} {e['kind']:11} {e.get('expected', '-'):16} {e.get('got', '-'):16} {e['content']!r}  ← {e['text']!r}")
    if args.json:
        Path(args.json).write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "errors"} for k, v in res.items()}, indent=2))


if __name__ == "__main__":
    main()
