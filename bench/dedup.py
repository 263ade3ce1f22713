"""mnemo's write-lifecycle benchmark: duplicate / related / conflicting / different, per model.

    python bench/dedup.py [--models e5,use] [--json OUT] [--data FILE] [--verbose]

Data: ``tests/data/lifecycle_pairs.jsonl``, pairs written by hand for this repository, each
``{"a": existing memory, "b": new memory, "label": ..., "lang": "zh|en|mixed"}``; the first
line's note states the labelling rule.

For each model and each pair the benchmark runs the code path users run: a fresh store in a
temporary folder (``Mnemo(path, model=model, scope="project:bench")``, default redaction on),
``m.remember(a)``, then ``mem, action = m.remember_many([{"content": b}])[0]``. The action is
mapped to a predicted label: ``merged`` → duplicate, ``related`` → related, ``superseded`` →
conflicting, ``created`` → different; any other action (or an error) is counted as ``other``.
The model is loaded once per model and shared by the per-pair stores.

Reported per model (and per language): confusion matrix, precision / recall / F1 per label,
accuracy, and the issue's targets — duplicate precision ≥ 0.97 with recall ≥ 0.8 (a false
merge loses a memory), conflicting precision ≥ 0.9. The benchmark also checks that the store
agrees with the action (active memories left: 1 after merged / superseded, 2 otherwise).

Calibration (independent of what the write path does today): the passage–passage cosine of each
pair (``embedder.embed_passages([a, b])``, vectors are L2-normalised) grouped by label, the
lowest cosine threshold for 'duplicate' that keeps duplicate precision ≥ 0.97 on this set and
the recall it gives, and a lower bound for related/conflicting candidates (p5 of their cosines)
with how many 'different' pairs lie above it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import mnemo  # noqa: F401  first, as every mnemo entry point does: it sets OPENBLAS_THREAD_TIMEOUT before numpy loads
import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "tests" / "data" / "lifecycle_pairs.jsonl"

LABELS = ("duplicate", "related", "conflicting", "different")
LANGS = ("en", "zh", "mixed")
ACTION_TO_LABEL = {"merged": "duplicate", "related": "related", "superseded": "conflicting", "created": "different"}
#: active memories the store should hold after the second write, per action
EXPECTED_ACTIVE = {"merged": 1, "superseded": 1, "related": 2, "created": 2}
OTHER = "other"
SCOPE = "project:bench"

TARGETS = {
    "duplicate_precision": 0.97,
    "duplicate_recall": 0.8,
    "conflicting_precision": 0.9,
}
CANDIDATE_PCTL = 5  # the related/conflicting candidate bound is this percentile of their cosines


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data

def load_pairs(path: Path) -> list[dict[str, Any]]:
    pairs = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in LABELS:
                raise SystemExit(f"{path}:{n}: label {row.get('label')!r} is not one of {', '.join(LABELS)}")
            if row.get("lang") not in LANGS:
                raise SystemExit(f"{path}:{n}: lang {row.get('lang')!r} is not one of {', '.join(LANGS)}")
            if not (isinstance(row.get("a"), str) and isinstance(row.get("b"), str) and row["a"].strip() and row["b"].strip()):
                raise SystemExit(f"{path}:{n}: a and b must be non-empty strings")
            pairs.append({"line": n, "a": row["a"], "b": row["b"], "label": row["label"], "lang": row["lang"]})
    return pairs


# ---------------------------------------------------------------- metrics

def scores(gold: list[str], pred: list[str]) -> dict[str, Any]:
    """Confusion matrix (gold rows × predicted columns, plus 'other'), P/R/F1 per label, accuracy."""
    cols = [*LABELS, OTHER]
    matrix = {g: {p: 0 for p in cols} for g in LABELS}
    for g, p in zip(gold, pred):
        matrix[g][p if p in LABELS else OTHER] += 1
    per: dict[str, dict[str, Any]] = {}
    for lab in LABELS:
        tp = matrix[lab][lab]
        predicted = sum(matrix[g][lab] for g in LABELS)
        support = sum(matrix[lab].values())
        p = tp / predicted if predicted else None
        r = tp / support if support else None
        f1 = 2 * p * r / (p + r) if p is not None and r is not None and p + r > 0 else (0.0 if p is not None and r is not None else None)
        per[lab] = {"precision": p, "recall": r, "f1": f1, "tp": tp, "predicted": predicted, "support": support}
    n = len(gold)
    acc = sum(1 for g, p in zip(gold, pred) if g == p) / n if n else None
    return {"n": n, "accuracy": acc, "matrix": matrix, "per_label": per, "targets": targets_met(per)}


def targets_met(per: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    got = {
        "duplicate_precision": per["duplicate"]["precision"],
        "duplicate_recall": per["duplicate"]["recall"],
        "conflicting_precision": per["conflicting"]["precision"],
    }
    # an undefined precision (nothing predicted) is not a met target
    return {k: {"value": v, "target": TARGETS[k], "met": v is not None and v >= TARGETS[k]} for k, v in got.items()}


def pct(values: list[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def calibration(pairs: list[dict[str, Any]], cos: np.ndarray) -> dict[str, Any]:
    """Cosine summary per label and the suggested thresholds."""
    labels = np.array([p["label"] for p in pairs])
    by_label: dict[str, Any] = {}
    for lab in LABELS:
        v = cos[labels == lab]
        by_label[lab] = None if not len(v) else {
            "n": int(len(v)), "min": float(v.min()), "p10": pct(v, 10), "median": pct(v, 50),
            "p90": pct(v, 90), "max": float(v.max()),
        }

    # duplicate threshold: the lowest t where "cos >= t => duplicate" keeps precision >= target
    is_dup = labels == "duplicate"
    n_dup = int(is_dup.sum())
    order = np.argsort(-cos, kind="stable")
    best: dict[str, Any] | None = None
    tp = fp = 0
    curve = []
    for rank, i in enumerate(order):
        tp += int(is_dup[i])
        fp += int(not is_dup[i])
        # a threshold can only sit between distinct values: skip ties with the next one
        if rank + 1 < len(order) and cos[order[rank + 1]] == cos[i]:
            continue
        prec = tp / (tp + fp)
        rec = tp / n_dup if n_dup else 0.0
        curve.append((float(cos[i]), prec, rec))
        if prec >= TARGETS["duplicate_precision"]:
            best = {"threshold": float(cos[i]), "precision": prec, "recall": rec, "tp": tp, "fp": fp}
    above = None
    if best is not None:
        wrong = Counter(str(labels[i]) for i in range(len(cos)) if cos[i] >= best["threshold"] and not is_dup[i])
        best["false_merges_by_label"] = dict(wrong)
    # the best precision reachable while keeping the recall target (what a cosine alone can do)
    at_recall = None
    for t, prec, rec in curve:
        if rec >= TARGETS["duplicate_recall"]:
            at_recall = {"threshold": t, "precision": prec, "recall": rec}
            break

    # candidate bound for related / conflicting: a low percentile of their cosines
    rc = cos[(labels == "related") | (labels == "conflicting")]
    diff = cos[labels == "different"]
    if len(rc):
        bound = pct(rc, CANDIDATE_PCTL)
        above = {
            "percentile": CANDIDATE_PCTL,
            "bound": bound,
            "different_above": int((diff >= bound).sum()),
            "different_total": int(len(diff)),
            "related_conflicting_below": int((rc < bound).sum()),
            "related_conflicting_total": int(len(rc)),
        }
    return {"by_label": by_label, "duplicate_threshold": best, "duplicate_at_target_recall": at_recall, "candidate_bound": above}


# ---------------------------------------------------------------- the run

def run_model(model: str, pairs: list[dict[str, Any]], verbose: bool) -> dict[str, Any]:
    from mnemo import Mnemo
    from mnemo._recall.embed import make_embedder

    t0 = time.perf_counter()
    emb = make_embedder(model)
    emb.embed_passages(["warm up the engine"])
    load_s = time.perf_counter() - t0
    log(f"{model}: {emb.name} loaded in {load_s:.1f}s")

    # calibration: passage-passage cosine of each pair, one batched call per chunk
    t0 = time.perf_counter()
    texts = [t for p in pairs for t in (p["a"], p["b"])]
    vecs = np.vstack([emb.embed_passages(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    cos = np.einsum("ij,ij->i", vecs[0::2].astype(np.float64), vecs[1::2].astype(np.float64))
    embed_s = time.perf_counter() - t0

    actions: list[str] = []
    anomalies: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemo-dedup-") as tmp:
        for k, p in enumerate(pairs):
            path = Path(tmp) / f"pair{k:04d}.db"
            try:
                with Mnemo(path, model=model, embedder=emb, scope=SCOPE) as m:
                    first = m.remember(p["a"])
                    mem, action = m.remember_many([{"content": p["b"]}])[0]
                    active = m.list(scope=SCOPE, statuses=("active",), limit=10)
                    exp = EXPECTED_ACTIVE.get(action)
                    if exp is not None and len(active) != exp:
                        anomalies.append({"line": p["line"], "action": action, "active": len(active), "expected": exp})
                    if action == "merged" and mem.id != first.id:
                        anomalies.append({"line": p["line"], "action": action, "problem": "merged into a different memory"})
            except Exception as exc:  # a crash on one pair is a finding, not the end of the run
                action = f"error:{type(exc).__name__}: {exc}"
            actions.append(action)
            try:
                path.unlink(missing_ok=True)
                for suffix in ("-wal", "-shm"):
                    Path(str(path) + suffix).unlink(missing_ok=True)
            except OSError:
                pass
    write_s = time.perf_counter() - t0

    pred = [ACTION_TO_LABEL.get(a, OTHER) for a in actions]
    gold = [p["label"] for p in pairs]
    result: dict[str, Any] = {
        "model": model,
        "embedder": emb.name,
        "load_s": round(load_s, 2),
        "calibration_embed_s": round(embed_s, 2),
        "writes_s": round(write_s, 2),
        "actions": dict(Counter(a if not a.startswith("error:") else "error" for a in actions)),
        "errors": sorted({a for a in actions if a.startswith("error:")})[:10],
        "store_anomalies": anomalies,
        "overall": scores(gold, pred),
        "by_lang": {
            lang: scores([g for g, p in zip(gold, pairs) if p["lang"] == lang], [x for x, p in zip(pred, pairs) if p["lang"] == lang])
            for lang in LANGS if any(p["lang"] == lang for p in pairs)
        },
        "calibration": calibration(pairs, cos),
        "calibration_by_lang": {
            lang: calibration([p for p in pairs if p["lang"] == lang], cos[[i for i, p in enumerate(pairs) if p["lang"] == lang]])
            for lang in LANGS if any(p["lang"] == lang for p in pairs)
        },
        "pairs": [
            {"line": p["line"], "label": p["label"], "lang": p["lang"], "action": a, "predicted": x, "cosine": round(float(c), 4)}
            for p, a, x, c in zip(pairs, actions, pred, cos)
        ],
    }
    if verbose:
        result["_texts"] = {p["line"]: (p["a"], p["b"]) for p in pairs}
    return result


# ---------------------------------------------------------------- report

def f3(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.3f}"


def print_scores(s: dict[str, Any], indent: str = "  ") -> None:
    cols = [*LABELS, OTHER]
    print(f"{indent}confusion (rows: gold, columns: predicted)")
    print(f"{indent}  {'':<12}" + "".join(f"{c:>12}" for c in cols))
    for g in LABELS:
        print(f"{indent}  {g:<12}" + "".join(f"{s['matrix'][g][c]:>12}" for c in cols))
    print(f"{indent}{'label':<12} {'prec':>6} {'recall':>6} {'F1':>6} {'pred':>5} {'gold':>5}")
    for lab in LABELS:
        d = s["per_label"][lab]
        print(f"{indent}{lab:<12} {f3(d['precision']):>6} {f3(d['recall']):>6} {f3(d['f1']):>6} {d['predicted']:>5} {d['support']:>5}")
    print(f"{indent}accuracy {f3(s['accuracy'])} over {s['n']} pairs")
    print_targets(s["targets"], indent)


def print_targets(t: dict[str, Any], indent: str) -> None:
    parts = []
    for k, d in t.items():
        parts.append(f"{k.replace('_', ' ')} {f3(d['value']).strip()} (≥ {d['target']}): {'met' if d['met'] else 'NOT met'}")
    print(f"{indent}targets: " + "; ".join(parts))


def print_report(res: dict[str, Any], verbose: bool) -> None:
    print(f"\n=== {res['model']} ({res['embedder']}) — load {res['load_s']}s, "
          f"{len(res['pairs'])} pairs written in {res['writes_s']}s, calibration embeddings {res['calibration_embed_s']}s")
    print(f"  actions seen: {res['actions']}")
    for e in res["errors"]:
        print(f"  ERROR {e}")
    if res["store_anomalies"]:
        print(f"  store disagrees with the action on {len(res['store_anomalies'])} pairs, e.g. {res['store_anomalies'][:3]}")
    print_scores(res["overall"])
    for lang, s in res["by_lang"].items():
        print(f"\n  -- {lang} ({s['n']} pairs)")
        print_scores(s, indent="    ")

    cal = res["calibration"]
    print("\n  passage–passage cosine by gold label")
    print(f"    {'label':<12} {'n':>4} {'min':>6} {'p10':>6} {'median':>6} {'p90':>6} {'max':>6}")
    for lab in LABELS:
        d = cal["by_label"][lab]
        if d:
            print(f"    {lab:<12} {d['n']:>4} {d['min']:6.3f} {d['p10']:6.3f} {d['median']:6.3f} {d['p90']:6.3f} {d['max']:6.3f}")
    dt = cal["duplicate_threshold"]
    if dt:
        print(f"    duplicate threshold (lowest cosine keeping precision ≥ {TARGETS['duplicate_precision']}): {dt['threshold']:.4f} "
              f"→ precision {dt['precision']:.3f}, recall {dt['recall']:.3f} ({dt['tp']} true, {dt['fp']} false merges {dt['false_merges_by_label']})")
    else:
        print(f"    no cosine threshold reaches duplicate precision ≥ {TARGETS['duplicate_precision']} on this set")
    ar = cal["duplicate_at_target_recall"]
    if ar:
        print(f"    for duplicate recall ≥ {TARGETS['duplicate_recall']} a cosine alone needs threshold {ar['threshold']:.4f}, "
              f"where precision is {ar['precision']:.3f}")
    cb = cal["candidate_bound"]
    if cb:
        print(f"    related/conflicting candidate bound (p{cb['percentile']} of their cosines): {cb['bound']:.4f} → "
              f"{cb['different_above']}/{cb['different_total']} 'different' pairs above it, "
              f"{cb['related_conflicting_below']}/{cb['related_conflicting_total']} related/conflicting below")
    print("    per language: median cosine by label; duplicate threshold (precision ≥ "
          f"{TARGETS['duplicate_precision']}) → recall")
    for lang, c in res["calibration_by_lang"].items():
        med = "  ".join(f"{lab[:4]} {c['by_label'][lab]['median']:.3f}" for lab in LABELS if c["by_label"][lab])
        t = c["duplicate_threshold"]
        thr = f"{t['threshold']:.4f} → recall {t['recall']:.3f}" if t else "none"
        print(f"      {lang:<6} {med}   dup threshold {thr}")
    if verbose:
        texts = res["_texts"]
        wrong = [p for p in res["pairs"] if p["predicted"] != p["label"]]
        print(f"\n  mistakes ({len(wrong)}):")
        for p in wrong:
            a, b = texts[p["line"]]
            print(f"    line {p['line']:>3} {p['label']:>11} → {p['action']:<10} cos {p['cosine']:.3f}  {a!r} | {b!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="e5,use", help="comma-separated embedders (default e5,use)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="labelled pairs (default tests/data/lifecycle_pairs.jsonl)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--verbose", "-v", action="store_true", help="list every misclassified pair")
    args = ap.parse_args(argv)

    pairs = load_pairs(args.data)
    counts = Counter((p["label"], p["lang"]) for p in pairs)
    print(f"{len(pairs)} pairs from {args.data}")
    print(f"  {'label':<12}" + "".join(f"{lang:>7}" for lang in LANGS) + f"{'all':>7}")
    for lab in LABELS:
        print(f"  {lab:<12}" + "".join(f"{counts[(lab, lang)]:>7}" for lang in LANGS) + f"{sum(counts[(lab, lang)] for lang in LANGS):>7}")

    results = []
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        res = run_model(model, pairs, args.verbose)
        print_report(res, args.verbose)
        res.pop("_texts", None)
        results.append(res)

    if args.json:
        out = {
            "when": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "data": str(args.data),
            "n_pairs": len(pairs),
            "targets": TARGETS,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            "models": results,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
