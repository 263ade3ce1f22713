"""Does structure-aware chunking find the evidence better than fixed windows? (LoCoMo dev)

Each LoCoMo dev conversation is rendered as one Markdown document: a level-2 heading per
session with its date, one paragraph per dialog turn (``Speaker: text``). The document is
then stored three ways, each in its own store, and every dev question (categories 1-4) is
asked with ``Mnemo.recall`` (hybrid, top 5, ``touch=False``):

* ``structure``: ``mnemo ingest`` of the file — headings, paragraphs, sentences, ~512
  characters, each chunk embedded with its title and heading path (the session and its date);
* ``structure-noprefix``: the same chunks embedded as they are (an ablation of the prefix);
* ``fixed-512``: consecutive 512-character windows of the same text, embedded as they are.

Recall@5: the share of a question's evidence turns that a top-5 chunk contains (covers at
least half of the turn's characters), averaged over questions. Real models only (``e5`` and
``use``); stores are cached under ``bench/.cache/chunking/`` so reruns only pay for queries.

    python bench/chunking.py                # e5 and use, writes the table to bench/README.md
    python bench/chunking.py --models e5 --no-readme
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bench import _data  # noqa: E402
from mnemo import Mnemo  # noqa: E402
from mnemo._ingest.chunk import chunk_markdown, fixed_windows, parse_front_matter  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "chunking"
README = Path(__file__).resolve().parent / "README.md"
VARIANTS = ("structure", "structure-noprefix", "fixed-512")
SIZE = 512


def render(spec: _data.StoreSpec) -> tuple[str, dict[str, tuple[int, int]]]:
    """The conversation as Markdown, and each turn's character span in it."""
    sessions: dict[int, list[_data.Record]] = {}
    for r in spec.records:
        sessions.setdefault(int(r.id.split(":")[0][1:]), []).append(r)
    parts = [f"---\ntitle: Conversation {spec.name}\ndate: {max(r.created_at for r in spec.records).date()}\n---\n",
             f"# Conversation {spec.name}\n"]
    spans: dict[str, tuple[int, int]] = {}
    text = "\n".join(parts) + "\n"
    for num in sorted(sessions):
        turns = sessions[num]
        when = turns[0].created_at.strftime("%-d %B %Y, %H:%M")
        head = f"## Session {num} · {when}\n\n"
        text += head
        for r in turns:
            spans[r.id] = (len(text), len(text) + len(r.content))
            text += r.content + "\n\n"
    return text, spans


def build(spec: _data.StoreSpec, model: str, variant: str, doc: str, path: Path) -> tuple[Mnemo, float]:
    folder = CACHE / model
    folder.mkdir(parents=True, exist_ok=True)
    m = Mnemo(folder / f"{variant}-{spec.name}.db", model=model, scope="bench", redactor=False)
    t0 = time.perf_counter()
    if variant == "structure":
        m.ingest([path], scope="bench", chunk_chars=SIZE, capture=False)
    elif not m.sources(prefix="bench:"):
        body = parse_front_matter(doc)[1]  # as ingest does: the front matter is not text
        chunks = chunk_markdown(doc, chunk_chars=SIZE, start=body) if variant == "structure-noprefix" else fixed_windows(doc, SIZE)
        m.remember_many([{"content": c.text, "scope": "bench", "source": f"bench:{variant}",
                          "metadata": {"start": c.start, "end": c.end}} for c in chunks], dedup=False, _merge_exact=False)
        with m.store.transaction():
            m.store.put_source({"key": f"bench:{variant}", "kind": "file", "content_hash": "-", "scope": "bench",
                                "ingested_at": "", "updated_at": "", "chunks": len(chunks)})
    return m, time.perf_counter() - t0


def covered(turn: tuple[int, int], chunk: tuple[int, int]) -> bool:
    overlap = min(turn[1], chunk[1]) - max(turn[0], chunk[0])
    return overlap * 2 >= turn[1] - turn[0]


def evaluate(m: Mnemo, spec: _data.StoreSpec, spans: dict[str, tuple[int, int]]) -> list[float]:
    scores = []
    for q in spec.queries:
        hits = m.recall(q.query, top_k=5, scope="bench", touch=False, now=q.now, min_score=-1.0)
        got = [(h.memory.metadata["start"], h.memory.metadata["end"]) for h in hits]
        found = sum(1 for g in q.gold if any(covered(spans[g], c) for c in got))
        scores.append(found / len(q.gold))
    return scores


def run(models: list[str], root: Path) -> dict[str, Any]:
    specs = _data.load_locomo(root / "locomo" / "locomo-dev.json")
    docs = CACHE / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for model in models:
        results[model] = {}
        for variant in VARIANTS:
            scores: list[float] = []
            chunks = 0
            for spec in specs:
                doc, spans = render(spec)
                path = docs / f"{spec.name}.md"
                if not path.exists() or path.read_text("utf-8") != doc:
                    path.write_text(doc, "utf-8")
                m, dt = build(spec, model, variant, doc, path)
                with m:
                    chunks += m.stats()["total"]
                    scores += evaluate(m, spec, spans)
                print(f"  {model} {variant} {spec.name}: built in {dt:.1f}s", file=sys.stderr)
            results[model][variant] = {"recall@5": statistics.mean(scores), "queries": len(scores), "chunks": chunks}
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "LoCoMo dev (3 conversations, 383 questions of categories 1-4), each conversation one Markdown",
        "document (a heading per session with its date, a paragraph per turn), retrieved with `recall`",
        "(hybrid, top 5). Recall@5 = share of a question's evidence turns that a top-5 chunk contains",
        "(≥ half of the turn). `structure` is `mnemo ingest` (512 characters, title + heading-path",
        "prefix); `structure-noprefix` the same chunks embedded bare; `fixed-512` plain 512-character windows.",
        "",
        "| model | chunking | chunks | Recall@5 (evidence turns) |",
        "|---|---|---|---|",
    ]
    for model, rows in results.items():
        for variant, r in rows.items():
            lines.append(f"| {model} | {variant} | {r['chunks']} | {r['recall@5']:.3f} ({r['queries']} questions) |")
    gains = [f"{model} {rows['structure']['recall@5'] - rows['fixed-512']['recall@5']:+.3f}" for model, rows in results.items()
             if "structure" in rows and "fixed-512" in rows]
    if gains:
        lines += ["", "Structure-aware chunking versus fixed windows (Recall@5): " + ", ".join(gains) + "."]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    start, end = "<!-- chunking:start -->", "<!-- chunking:end -->"
    body = README.read_text("utf-8")
    block = f"{start}\n{text}\n{end}"
    if start in body and end in body:
        body = body[: body.index(start)] + block + body[body.index(end) + len(end):]
    else:
        body = body.rstrip("\n") + "\n\n## Chunking — `bench/chunking.py`\n\n" + block + "\n"
    README.write_text(body, "utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="e5,use")
    ap.add_argument("--data", type=Path, default=_data.default_bench_root())
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()
    results = run(args.models.split(","), args.data)
    text = table(results)
    print(text)
    if not args.no_readme:
        write_readme(text)


if __name__ == "__main__":
    main()
