"""Recall on our own labelled sets: cross-language names, and questions with no stored answer.

    python bench/recall_sets.py                       # dev sets, default model (e5)
    python bench/recall_sets.py --held-out            # the held-out sets: score once, then leave
    python bench/recall_sets.py --model use --floor 0.2 --json out.json

Sets (``bench/recall/``, written from a short brief by writers who saw none of mnemo's code,
rules or glossary; each in a dev and a held-out part with nothing in common):

* ``names_*.json``: 75 memories each (60 answers, 15 distractors) naming people, products,
  companies, places and tools that have a form in both languages (支付宝/Alipay, 张伟/Zhang Wei,
  杭州/Hangzhou, 编辑器/editor); 60 questions each in the other language than their answer. The
  two parts name disjoint entities.
* ``noanswer_*.json``: a developer's store of 90 memories (two personas), 60 questions whose
  answer is stored and 60 whose answer is not (often close in domain, some general knowledge).
  ``noanswer_heldout2``/``3`` (a payments backend developer; a firmware developer) were written
  later, blind, for the next change to the no-answer behaviour: score each once (``--part``).
* ``longq_*``: long messages as people send them to an assistant (20 dialogues of 4-10 turns,
  20 pastes of a log, trace, config, code or email with the user's request, 20 long requests;
  half Chinese), 100 memories of one persona each; R@5 by kind. Written blind for the change
  that lets the full-text channel read more of a long message than the model does;
  ``longq_heldout2`` (40 dialogues) for a conversation rule that it then turned down;
  ``longq_heldout3`` (a CNC machine shop's engineer; 20 of each kind) for the model's token
  budget on a long message, which it kept at 96.
* ``names_heldout2`` … ``7`` (a game studio; hospital software; a climate lab; a freelance
  developer; an IT consultant; a DevOps engineer, half of it technical terms), written
  later, blind, for the names-across-scripts change (people by their pinyin): each was scored
  once as it came, then served as a seen set (see bench/README.md for which is which).
  ``names_heldout8`` and ``9`` (a cross-border e-commerce operations lead; a robotics lab's
  research engineer; 25 of each 60 questions on terms) were written blind for the dictionary
  (``_recall/dictionary.py``) and scored once with it, before and after.

Each question is asked through ``Mnemo.recall`` (the code path users run, relevance floor on) in
the scope it names (the names set: its answer's scope). Reported: **R@5** (an expected memory in
the top five hits), **R@1**, and for the unanswerable questions the **no-answer rate** (nothing
returned), with the floor that produced them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from mnemo import Mnemo  # noqa: E402

SETS = Path(__file__).resolve().parent / "recall"
TARGETS = {"names": ("r_at_5", 0.85), "noanswer": ("no_answer_rate", 0.90)}


def load(name: str, part: str) -> dict[str, Any]:
    """One set's part (``dev`` or ``heldout``), checked."""
    data = json.loads((SETS / f"{name}_{part}.json").read_text("utf-8"))
    ids = {m["id"] for m in data["memories"]}
    for q in data["queries"]:
        missing = set(q["expected"]) - ids
        if missing:
            raise SystemExit(f"{name}_{part}: query {q['q']!r} expects unknown ids {sorted(missing)}")
    return data


def run(name: str, part: str, *, model: str = "e5", floor: float | None = None, verbose: bool = False,
        embedder: Any = None) -> dict[str, Any]:
    """Build the set's store in a scratch folder, ask every question; the measures."""
    data = load(name, part)
    scope_of = {m["id"]: m["scope"] for m in data["memories"]}
    with tempfile.TemporaryDirectory() as tmp:
        kw: dict[str, Any] = {"embedder": embedder} if embedder is not None else {"model": model}
        with Mnemo(f"{tmp}/s.db", **kw) as m:
            m.import_([{"id": x["id"], "content": x["content"], "scope": x["scope"], "type": x["type"]} for x in data["memories"]])
            rows = []
            t0 = time.perf_counter()
            for q in data["queries"]:
                scope = q.get("scope") or (scope_of[q["expected"][0]] if q["expected"] else "all")
                hits = m.recall(q["q"], scope=scope, top_k=5, touch=False, min_score=floor)
                got = [h.memory.id for h in hits]
                rows.append({**q, "got": got, "scores": [round(h.score, 3) for h in hits]})
            took = time.perf_counter() - t0
    answerable = [r for r in rows if r["expected"]]
    empty = [r for r in rows if not r["expected"]]
    out: dict[str, Any] = {
        "set": f"{name}_{part}", "queries": len(rows), "seconds": round(took, 1),
        "r_at_5": _ratio(sum(bool(set(r["expected"]) & set(r["got"])) for r in answerable), len(answerable)),
        "r_at_1": _ratio(sum(bool(r["got"]) and r["got"][0] in r["expected"] for r in answerable), len(answerable)),
        "no_answer_rate": _ratio(sum(not r["got"] for r in empty), len(empty)),
        "answerable": len(answerable), "unanswerable": len(empty),
    }
    kinds = sorted({r["kind"] for r in answerable if r.get("kind")})
    if kinds:  # the long-message sets: a dialogue, a paste with a request, a long request
        out["r_at_5_by_kind"] = {k: _ratio(sum(bool(set(r["expected"]) & set(r["got"])) for r in answerable if r.get("kind") == k),
                                           sum(r.get("kind") == k for r in answerable)) for k in kinds}
    if verbose:
        for r in answerable:
            if not set(r["expected"]) & set(r["got"]):
                print(f"  miss  {r['q']}  expected {r['expected']} got {list(zip(r['got'], r['scores']))}")
        for r in empty:
            if r["got"]:
                print(f"  noise {r['q']}  got {list(zip(r['got'], r['scores']))}")
    return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="e5")
    ap.add_argument("--held-out", action="store_true", help="score the held-out parts (once)")
    ap.add_argument("--part", help="score this part instead (e.g. heldout2: a later round of held-out questions, scored once)")
    ap.add_argument("--floor", type=float, help="relevance floor (default: the shipped min_score)")
    ap.add_argument("--sets", default="names,noanswer")
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    part = args.part or ("heldout" if args.held_out else "dev")
    results = [run(name, part, model=args.model, floor=args.floor, verbose=args.verbose) for name in args.sets.split(",")]
    for r in results:
        na = "" if r["no_answer_rate"] is None else f"  no-answer {r['no_answer_rate']:.3f} of {r['unanswerable']}"
        by_kind = "".join(f"  {k} {v:.3f}" for k, v in r.get("r_at_5_by_kind", {}).items())
        print(f"{r['set']:18} R@5 {r['r_at_5']:.3f}  R@1 {r['r_at_1']:.3f} of {r['answerable']}{na}{by_kind}  ({r['seconds']} s, {args.model})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
