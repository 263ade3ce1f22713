"""Train the capture detector's second stage (``src/mnemo/_capture/detect_model.py``) and measure it.

    python bench/train_capture.py --cv          # leave-one-split-out scores, nothing written
    python bench/train_capture.py               # train on every labelled split, write the model

Training data: every detection of the rules on the labelled splits, labelled by the bench's
matching rule (``bench/detect.py``): worth keeping when it matches an expected memory, and then
of that memory's type. Two sources of detections, deduplicated:

- the current rules (``detect(..., second_stage=False)``) on every split;
- each earlier pass of the rules on the splits it was not tuned on (``bench/data/capture_passes.jsonl``,
  written by ``bench/capture_passes.py``): the mistakes rules make on text they have not seen,
  which is what the second stage is for.

``--cv`` holds out one split at a time, trains on the rest (every source, that split's rows
excluded) and scores the held-out split as the rules first saw it, with the pass that had not yet
been tuned on it (for i and p, the current rules). Splits j and k (``HELD_OUT`` in ``bench/detect.py``)
are never read here: they measure the trained model on new text. The model is
deterministic (full-batch Adam from zeros), so the same data gives the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import capture_passes  # noqa: E402
from detect import HELD_OUT, evaluate, load_all, match  # noqa: E402

from mnemo._capture import detect as _detect  # noqa: E402
from mnemo._capture import detect_model as _detect_model  # noqa: E402
from mnemo._capture.detect import Detection  # noqa: E402
from mnemo._capture.detect_model import DIM, TYPES, Model, features  # noqa: E402

PASSES = ROOT / "bench" / "data" / "capture_passes.jsonl"
#: the pass that first saw each split: the last one run on it, since every later pass was tuned on
#: it (c: fcc07c7 … i: 207a678, the current rules)
FIRST_PASS = {split: commit for commit, splits in capture_passes.PASSES for split in splits}

Found = tuple[int, int, str, float, str, bool]  # start, end, type, confidence, rule, explicit


def current(rows: list[dict[str, Any]]) -> dict[str, list[Found]]:
    """What the current rules (no second stage) detect in each row."""
    out = {}
    for r in rows:
        found = _detect.detect(r["text"], role=r.get("role", "user"), second_stage=False)
        out[r["id"]] = [(d.start, d.end, d.type, d.confidence, d.rule, d.explicit) for d in found]
    return out


def passes(rows: list[dict[str, Any]]) -> dict[str, dict[str, list[Found]]]:
    """What each earlier pass detected in the rows of the splits it was run on, by pass and row id
    (a row it found nothing in has an empty list; rows of other splits are absent)."""
    covered = {commit: splits for commit, splits in capture_passes.PASSES}
    out: dict[str, dict[str, list[Found]]] = {
        commit: {r["id"]: [] for r in rows if r["split"] in splits} for commit, splits in covered.items()}
    for line in PASSES.read_text("utf-8").splitlines():
        o = json.loads(line)
        if o["id"] in out[o["rules"]]:
            out[o["rules"]][o["id"]] = [tuple(f) for f in o["found"]]  # type: ignore[misc]
    return out


def _as_detections(found: list[Found], row: dict[str, Any]) -> list[Detection]:
    return [Detection(content=row["text"][s:e], type=t, confidence=c, importance=0.5, explicit=x, rule=ru,
                      lang=ru.split(":")[0] or row["lang"], start=s, end=e) for s, e, t, c, ru, x in found]


class Examples:
    """Feature slots and labels: ``keep`` (each distinct detection: worth keeping?), ``add`` (each
    sentence no rule fired in: a memory?) and ``types`` (every matched one: its gold type)."""

    def __init__(self) -> None:
        self.keep: tuple[list[list[int]], list[int], list[float]] = ([], [], [])
        self.add: tuple[list[list[int]], list[int], list[float]] = ([], [], [])
        self.types: tuple[list[list[int]], list[int], list[float]] = ([], [], [])

    def put(self, kind: str, slots: list[int], gold: str | None, weight: float) -> None:
        for (xs, ys, ws), y in ((getattr(self, kind), gold is not None), (self.types, TYPES.index(gold) if gold else None)):
            if y is not None:
                xs.append(slots)
                ys.append(y)
                ws.append(weight)


def examples(rows: list[dict[str, Any]], sources: Iterable[dict[str, list[Found]]], weights: dict[str, float] | None = None) -> Examples:
    """The labelled examples of what each source of detections found (and left) in ``rows``
    (``weights``: the weight of a split's examples, 1 when not given)."""
    seen: set[tuple[Any, ...]] = set()
    out = Examples()
    for source in sources:
        for r in rows:
            if r["id"] not in source:
                continue  # a pass that was not run on this split
            dets = _as_detections(source[r["id"]], r)
            text = _detect._blank_code(r["text"])
            spans = _detect.untriggered(text, dets)
            cands = [Detection(content=text[s:e], type="", confidence=0.0, importance=0.5, explicit=False,
                               rule="sentence", lang="", start=s, end=e) for s, e in spans]
            # detections first, as the bench matches them; then the sentences against what they missed
            matched, _, missed = match(r, dets)
            gold = {id(d): e["type"] for e, d in matched}
            gold.update({id(d): e["type"] for e, d in match(dict(r, expected=missed), cands)[0]})
            role = r.get("role", "user")
            weight = (weights or {}).get(r["split"], 1.0)
            for index, d in enumerate(dets):
                key = (r["id"], d.start, d.end, d.type, d.rule, len(dets), index)
                if key not in seen:
                    seen.add(key)
                    out.put("keep", features(text, d.start, d.end, d.type, d.confidence, d.rule, d.explicit, role, d.lang,
                                             len(dets), index), gold.get(id(d)), weight)
            for d in cands:
                key = (r["id"], d.start, d.end, "sentence", len(dets))
                if key not in seen:
                    seen.add(key)
                    out.put("add", features(text, d.start, d.end, "", 0.0, "sentence", False, role, "", len(dets), -1),
                            gold.get(id(d)), weight)
    return out


def _flat(xs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(len(xs)), [len(x) for x in xs])
    return rows, np.concatenate([np.array(x, dtype=np.int64) for x in xs])


def _adam(grad_fn: Any, shape: tuple[int, ...], iters: int, lr: float) -> np.ndarray:
    w = np.zeros(shape)
    m = np.zeros(shape)
    v = np.zeros(shape)
    for t in range(1, iters + 1):
        g = grad_fn(w)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def train_binary(xs: list[list[int]], labels: list[int], weights: list[float], l2: float, iters: int = 300,
                 lr: float = 0.05) -> np.ndarray:
    """Logistic regression weights for a yes/no label (each example weighted)."""
    rows, cols = _flat(xs)
    y = np.array(labels, dtype=np.float64)
    sw = np.array(weights, dtype=np.float64)
    n, total = len(xs), float(sw.sum())

    def grad(w: np.ndarray) -> np.ndarray:
        z = np.bincount(rows, weights=w[cols], minlength=n)
        err = (1 / (1 + np.exp(-z)) - y) * sw
        return np.bincount(cols, weights=err[rows], minlength=DIM) / total + l2 * w

    return _adam(grad, (DIM,), iters, lr)


def train_types(xs: list[list[int]], gold: list[int], weights: list[float], l2: float, iters: int = 300,
                lr: float = 0.05) -> np.ndarray:
    """Multinomial logistic regression weights for the type (``gold``: indexes into ``TYPES``)."""
    y = np.eye(len(TYPES))[gold]
    rows, cols = _flat(xs)
    sw = np.array(weights, dtype=np.float64)[:, None]
    n, total = len(xs), float(sw.sum())

    def grad(w: np.ndarray) -> np.ndarray:
        z = np.stack([np.bincount(rows, weights=w[cols, k], minlength=n) for k in range(len(TYPES))], axis=1)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        err = (p - y) * sw
        return np.stack([np.bincount(cols, weights=err[rows, k], minlength=DIM) for k in range(len(TYPES))], axis=1) / total + l2 * w

    return _adam(grad, (DIM, len(TYPES)), iters, lr)


def fit(rows: list[dict[str, Any]], sources: list[dict[str, list[Found]]], opts: argparse.Namespace) -> Model:
    ex = examples(rows, sources, {"p": opts.plain_weight})
    return Model(train_binary(*ex.keep, opts.l2), train_types(*ex.types, opts.l2_type), opts.threshold, opts.type_margin,
                 train_binary(*ex.add, opts.l2), opts.add_threshold, opts.protect)


def score(rows: list[dict[str, Any]], found: dict[str, list[Found]], model: Model | None) -> dict[str, float]:
    """Precision, recall and type accuracy on ``rows`` of the detections ``found``, through ``model``
    (scored as ``bench/detect.py`` scores the detector)."""

    def find(r: dict[str, Any]) -> list[Detection]:
        dets = _as_detections(found.get(r["id"], []), r)
        return dets if model is None else _detect.apply_model(model, _detect._blank_code(r["text"]), r.get("role", "user"), dets)

    res = evaluate(rows, find=find)
    return {k: res[k] for k in ("precision", "recall", "type_accuracy")}


def cross_validate(rows: list[dict[str, Any]], opts: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Leave one split out: rules alone and rules + second stage, on each split as first seen."""
    old = passes(rows)
    now = current(rows)
    out = {}
    for key in [*FIRST_PASS, "p"]:
        test = [r for r in rows if r["split"] == key]
        train = [r for r in rows if r["split"] != key]
        model = fit(train, [now, *old.values()], opts)
        first = old[FIRST_PASS[key]] if key in FIRST_PASS else now  # the rules were never tuned on p
        out[key] = {"rules": score(test, first, None), "model": score(test, first, model)}
        print(key, out[key], file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cv", action="store_true", help="leave-one-split-out scores only")
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--l2-type", type=float, default=3e-5)
    ap.add_argument("--threshold", type=float, default=0.85)
    ap.add_argument("--type-margin", type=float, default=0.0)
    ap.add_argument("--add-threshold", type=float, default=0.8)
    ap.add_argument("--protect", type=float, default=0.8, help="rule confidence from which a detection is never dropped")
    ap.add_argument("--plain-weight", type=float, default=1.0, help="weight of split p (short plain messages)")
    opts = ap.parse_args()
    rows = [r for r in load_all() if r["split"] not in HELD_OUT]  # j and k stay unseen
    if opts.cv:
        res = cross_validate(rows, opts)
        print("| held-out split (as first seen) | rules alone: P / R / type | with the second stage: P / R / type |\n|---|---|---|")
        mean = {kind: {m: float(np.mean([res[k][kind][m] for k in FIRST_PASS])) for m in ("precision", "recall", "type_accuracy")}
                for kind in ("rules", "model")}
        for key, r in [*res.items(), (f"mean of {', '.join(FIRST_PASS)}", mean)]:
            print(f"| {key} | " + " | ".join(" / ".join(f"{r[kind][m]:.3f}" for m in ("precision", "recall", "type_accuracy"))
                                           for kind in ("rules", "model")) + " |")
        return
    model = fit(rows, [current(rows), *passes(rows).values()], opts)
    model.save(_detect_model.MODEL_FILE)
    print(f"wrote {_detect_model.MODEL_FILE}")


if __name__ == "__main__":
    main()
