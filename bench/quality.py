"""Retrieval quality on public data: LoCoMo (dev) and MADial-Bench (zh, en).

Protocol: ``<shared>/bench/README.md``. Each store is built with ``Mnemo.import_`` and queried
with ``Mnemo.recall`` — the code path users run — once per channel setting: full-text only
(``fts``), vectors only (``vector``) and ``hybrid``. Recall never counts as an access here
(``touch=False``), so the benchmark cannot change its own rankings. The relevance floor stays
on (as users have it); ``--no-floor`` measures the ranking alone.

    python bench/quality.py                      # e5 (default model), all datasets
    python bench/quality.py --model use --json out.json
    python bench/quality.py --datasets locomo --modes hybrid
    python bench/quality.py --datasets conversations,conversations2   # our blind conversations (bench/recall/)

Stores are cached under ``bench/.cache/quality/<model>/`` (import is idempotent, so a rerun
only pays for queries). The data never enters the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bench import _data  # noqa: E402
from mnemo import Mnemo  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "quality"
MODES = ("fts", "vector", "hybrid")
TARGETS = {"locomo": 0.55, "madial-zh": 0.55}


#: our own blind sets in LoCoMo's format, written by helpers who saw no code: 3 conversations of
#: 5 sessions each (two English, one Chinese), 120 questions a set
CONVERSATIONS = {name: Path(__file__).resolve().parent / "recall" / f"{name.replace('conversations', 'conversations_heldout')}.json"
                 for name in ("conversations", "conversations2")}


def load(name: str, root: Path) -> list[_data.StoreSpec]:
    if name == "locomo":
        return _data.load_locomo(root / "locomo" / "locomo-dev.json")
    if name in CONVERSATIONS:
        return _data.load_locomo(CONVERSATIONS[name])
    lang = name.split("-", 1)[1]
    return _data.load_madial(root / "madial", lang)


def build_store(spec: _data.StoreSpec, model: str, dataset: str, places: bool = True) -> Mnemo:
    """The spec's store, imported once and cached. ``places``: each conversation turn keeps its
    conversation, session and place (as ``mnemo ingest`` of a chat export keeps them), so recall
    can read around a hit; without, every turn stands alone (the benchmark before 2026-12-02)."""
    placed = places and any(r.place is not None for r in spec.records)
    folder = CACHE / model / (dataset + ("-placed" if placed else ""))
    folder.mkdir(parents=True, exist_ok=True)
    m = Mnemo(folder / f"{spec.name}.db", model=model, scope="bench")
    records = [{"id": r.id, "content": r.content, "created_at": r.created_at.isoformat(), "scope": "bench", "type": "note",
                **({"source": r.source, "source_session": r.session, "metadata": {"chunk": r.place}} if placed else {})}
               for r in spec.records]
    t0 = time.perf_counter()
    report = m.import_(records)
    if report["imported"]:
        dt = time.perf_counter() - t0
        print(f"  built {spec.name}: {report['imported']} memories in {dt:.1f} s ({report['imported'] / dt:.0f}/s)", file=sys.stderr)
    return m


def run(datasets: list[str], model: str, modes: list[str], floor: bool, root: Path, places: bool = True) -> dict[str, Any]:
    results: dict[str, Any] = {"model": model, "floor": floor, "places": places, "datasets": {}}
    for dataset in datasets:
        specs = load(dataset, root)
        per_mode: dict[str, list[tuple[str, dict[str, float]]]] = {mode: [] for mode in modes}
        timings: dict[str, float] = {mode: 0.0 for mode in modes}
        n_queries = 0
        for spec in specs:
            m = build_store(spec, model, dataset, places)
            items = [{"qid": q.qid, "query": q.query, "now": q.now.isoformat(), "k": 10} for q in spec.queries]
            for mode in modes:
                t0 = time.perf_counter()
                rows = m.recall_batch(items, top_k=10, mode=mode, min_score=None if floor else 0.0)
                timings[mode] += time.perf_counter() - t0
                for q, row in zip(spec.queries, rows):
                    ranked = [r["id"] for r in row["results"]]
                    per_mode[mode].append((q.category, _data.score_ranking(ranked, q.gold)))
            n_queries += len(spec.queries)
            m.close()
        results["datasets"][dataset] = {
            "queries": n_queries,
            "skipped": _data.skip_summary(specs),
            "modes": {mode: _data.aggregate(rows) for mode, rows in per_mode.items()},
            "seconds": {mode: round(t, 2) for mode, t in timings.items()},
        }
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"retrieval quality — model {results['model']}, relevance floor {'on' if results['floor'] else 'off'}, "
             f"conversation turns {'with' if results.get('places', True) else 'without'} their place"]
    for dataset, info in results["datasets"].items():
        lines.append(f"\n{dataset}: {info['queries']} queries (skipped: {info['skipped'] or 'none'})")
        cats = list(next(iter(info["modes"].values())).keys())
        lines.append(f"  {'mode':<7} {'category':<12} {'n':>4} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
        for mode, agg in info["modes"].items():
            for cat in cats:
                s = agg[cat]
                lines.append(f"  {mode:<7} {cat:<12} {int(s['n']):>4} {s['r@5']:>6.3f} {s['r@10']:>6.3f} {s['mrr@10']:>7.3f}")
        overall = {mode: agg["overall"]["r@5"] for mode, agg in info["modes"].items()}
        if {"fts", "vector", "hybrid"} <= overall.keys():
            beats = overall["hybrid"] > max(overall["fts"], overall["vector"])
            lines.append(f"  hybrid beats both channels alone (R@5): {'yes' if beats else 'NO'}")
        if dataset in TARGETS and "hybrid" in overall:
            t = TARGETS[dataset]
            lines.append(f"  target hybrid R@5 ≥ {t}: {overall['hybrid']:.3f} {'met' if overall['hybrid'] >= t else 'NOT met'}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="e5", help="e5 (default) or use")
    ap.add_argument("--datasets", default="locomo,madial-zh,madial-en")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--no-floor", action="store_true", help="disable the relevance floor (ranking only)")
    ap.add_argument("--no-places", action="store_true", help="import conversation turns without their session and place (no context)")
    ap.add_argument("--data", type=Path, default=None, help="benchmark data folder (default: ../shared/bench or MNEMO_BENCH_DATA)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args()
    known = ["locomo", "madial-zh", "madial-en", *CONVERSATIONS]
    unknown = [d for d in args.datasets.split(",") if d not in known]
    if unknown:
        ap.error(f"unknown dataset {', '.join(unknown)}; choose from {', '.join(known)}")
    wrong = [m for m in args.modes.split(",") if m not in MODES]
    if wrong:
        ap.error(f"unknown mode {', '.join(wrong)}; choose from {', '.join(MODES)}")
    root = args.data or _data.default_bench_root()
    if not root.exists():
        sys.exit(f"benchmark data not found at {root} (set MNEMO_BENCH_DATA)")
    results = run(args.datasets.split(","), args.model, args.modes.split(","), not args.no_floor, root, not args.no_places)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
