"""Write-time decisions on blind pairs: is any distinct fact hidden by a merge or a supersede?

    python bench/trust.py [--models e5,use] [--splits a,b,c] [--held-out] [--json OUT] [-v]

Data: ``bench/pairs/split_*.jsonl``, pairs written from ``bench/pairs/GUIDE.md`` by writers who
saw neither mnemo's rules nor each other's pairs, each ``{"a": existing memory, "b": new one,
"class": ..., "lang": en|zh|mixed|cross}``, in six classes: ``restate`` (should merge),
``adds_detail``, ``other_subject``, ``related``, ``unrelated`` (should stay separate) and
``update`` (should supersede). Splits a–x are for tuning: d–f, g–i, j–l, m–o, p–r, s–u and v–x
were each held out and scored once before they joined the tuning set (bench/README.md keeps
those scores).
A next round: three new splits from GUIDE.md by new writers, named in ``HELD_OUT`` and scored
once with ``--held-out`` (the default run refuses to read them).

For each pair the code path users run: a fresh store (``Mnemo(path, embedder=…)``, default
redaction), ``remember(a)``, then ``remember_many([{"content": b}])``; the action (merged,
superseded, related = created and linked, created) and the links in the store are read back.

Reported per model, split and language: false merge + false supersede as a share of the pairs
that should stay separate (target ≤ 0.5 %), merge recall (≥ 0.7), supersede precision (≥ 0.97)
and recall (≥ 0.8), related-link precision (≥ 0.85: a link is right when the pair is about the
same thing, i.e. any class but ``other_subject`` and ``unrelated``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import mnemo  # noqa: F401  first: it sets OPENBLAS_THREAD_TIMEOUT before numpy loads

REPO = Path(__file__).resolve().parents[1]
PAIRS = REPO / "bench" / "pairs"
CLASSES = ("restate", "adds_detail", "other_subject", "update", "related", "unrelated")
SEPARATE = ("adds_detail", "other_subject", "related", "unrelated")
SAME_THING = ("restate", "adds_detail", "update", "related")  # a related link between these is right
LANGS = ("en", "zh", "mixed", "cross")
TUNE, HELD_OUT = tuple("abcdefghijklmnopqrstuvwx"), ()
TARGETS = {"false_hide_rate": ("≤", 0.005), "merge_recall": ("≥", 0.7), "supersede_precision": ("≥", 0.97),
           "supersede_recall": ("≥", 0.8), "link_precision": ("≥", 0.85)}


def load(split: str) -> list[dict[str, Any]]:
    """One split's pairs, checked."""
    path = PAIRS / f"split_{split}.jsonl"
    rows = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("class") not in CLASSES or row.get("lang") not in LANGS:
            raise SystemExit(f"{path}:{n}: class {row.get('class')!r} / lang {row.get('lang')!r} unknown")
        rows.append({**row, "split": split, "line": n})
    return rows


def decide(emb: Any, pair: dict[str, Any]) -> dict[str, Any]:
    """Run the pair through a fresh store; what happened to b, and the links it got."""
    from mnemo import Mnemo

    with tempfile.TemporaryDirectory() as tmp, Mnemo(f"{tmp}/s.db", embedder=emb, scope="project:bench") as m:
        old = m.remember(pair["a"])
        mem, action = m.remember_many([{"content": pair["b"]}])[0]
        linked = any(r["id"] == old.id and r["kind"] == "related" for r in m.store.relations(mem.id)) if mem.id != old.id else False
        conflict = any(e["kind"] == "possible_conflict" for e in m.store.events(mem.id)) if mem.id != old.id else False
    return {"action": action, "linked": linked or action == "related", "possible_conflict": conflict}


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's measures over ``rows`` (each with class and action)."""
    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    sep = [r for r in rows if r["class"] in SEPARATE]
    hidden = [r for r in sep if r["action"] in ("merged", "superseded")]
    restate = [r for r in rows if r["class"] == "restate"]
    update = [r for r in rows if r["class"] == "update"]
    sup = [r for r in rows if r["action"] == "superseded"]
    links = [r for r in rows if r["action"] not in ("merged", "superseded") and r["linked"]]
    out = {
        "n": len(rows),
        "false_hide_rate": ratio(len(hidden), len(sep)), "false_hides": len(hidden), "separate": len(sep),
        "merge_recall": ratio(sum(r["action"] == "merged" for r in restate), len(restate)),
        "supersede_precision": ratio(sum(r["class"] == "update" for r in sup), len(sup)),
        "supersede_recall": ratio(sum(r["action"] == "superseded" for r in update), len(update)),
        "link_precision": ratio(sum(r["class"] in SAME_THING for r in links), len(links)), "links": len(links),
        "possible_conflicts": sum(r["possible_conflict"] for r in rows),
        "by_class": {c: dict(Counter(r["action"] for r in rows if r["class"] == c)) for c in CLASSES},
    }
    out["met"] = {k: (v is not None and (v <= t if op == "≤" else v >= t)) for k, (op, t) in TARGETS.items() for v in [out[k]]}
    return out


def fmt(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def table(title: str, groups: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(f"{'':10} {'n':>4} {'false hide':>11} {'merge R':>8} {'sup P':>6} {'sup R':>6} {'link P':>7} {'links':>5}")
    for name, s in groups.items():
        hide = f"{s['false_hides']}/{s['separate']}"
        print(f"{name:10} {s['n']:>4} {hide:>11} {fmt(s['merge_recall']):>8} {fmt(s['supersede_precision']):>6} "
              f"{fmt(s['supersede_recall']):>6} {fmt(s['link_precision']):>7} {s['links']:>5}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="e5")
    ap.add_argument("--splits", default=",".join(TUNE))
    ap.add_argument("--held-out", action="store_true", help=f"score the held-out splits {','.join(HELD_OUT)} (once)")
    ap.add_argument("--json", help="write the numbers and every decision here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every wrong decision")
    args = ap.parse_args()
    if args.held_out and not HELD_OUT:
        raise SystemExit("no held-out splits now (v–x were the last scored once: bench/README.md); write new ones from bench/pairs/GUIDE.md")
    splits = list(HELD_OUT) if args.held_out else [s for s in args.splits.split(",") if s]
    if not args.held_out and set(splits) & set(HELD_OUT):
        raise SystemExit("the held-out splits are scored with --held-out only")
    pairs = [p for s in splits for p in load(s)]
    from mnemo._recall.embed import make_embedder

    report: dict[str, Any] = {"splits": splits, "models": {}}
    for model in args.models.split(","):
        emb = make_embedder(model)
        t0 = time.perf_counter()
        rows = [{**p, **decide(emb, p)} for p in pairs]
        took = time.perf_counter() - t0
        groups = {"all": score(rows)}
        groups.update({f"split {s}": score([r for r in rows if r["split"] == s]) for s in splits})
        groups.update({lang: score([r for r in rows if r["lang"] == lang]) for lang in LANGS})
        table(f"{model} ({emb.name}): {len(rows)} pairs of splits {','.join(splits)} in {took:.0f}s", groups)
        print("actions by class:", json.dumps(groups["all"]["by_class"], ensure_ascii=False))
        print("targets met:", groups["all"]["met"])
        if args.verbose:
            wrong = defaultdict(list)
            for r in rows:
                bad = (r["class"] in SEPARATE and r["action"] in ("merged", "superseded")) or \
                      (r["class"] == "restate" and r["action"] != "merged") or \
                      (r["class"] == "update" and r["action"] != "superseded") or \
                      (r["class"] in ("other_subject", "unrelated") and r["linked"] and r["action"] not in ("merged", "superseded"))
                if bad:
                    wrong[r["class"]].append(r)
            for c, rs in wrong.items():
                print(f"\n-- {c}: {len(rs)} wrong")
                for r in rs:
                    print(f"  [{r['split']}{r['line']} {r['lang']}] {r['action']}{' +link' if r['linked'] else ''}: {r['a']}  ||  {r['b']}")
        report["models"][model] = {"embedder": emb.name, "seconds": took, "groups": groups,
                                   "decisions": [{k: r[k] for k in ("split", "line", "class", "lang", "action", "linked")} for r in rows]}
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=1), "utf-8")


if __name__ == "__main__":
    sys.exit(main())
