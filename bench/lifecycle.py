"""Lifecycle operations at scale: a write with the dedup check, and gc, on a 100k store.

    python bench/lifecycle.py [--size 100000] [--writes 40]

Uses the speed benchmark's cached synthetic store (``bench/_corpus.py``), copied so the writes
do not change it. A write is ``Mnemo.remember`` with dedup on: embed, then — inside the write
transaction — the nearest neighbours in the scope, the conflict rules, and the insert. The
embedding is measured separately, as for search.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import mnemo  # noqa: E402,F401  before numpy, as every entry point
from bench import _corpus  # noqa: E402
from mnemo import Mnemo  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--writes", type=int, default=40)
    args = ap.parse_args()
    src = _corpus.build_store(args.size, log=lambda s: print(s, file=sys.stderr))
    work = src.with_name(f"lifecycle-{src.name}")
    shutil.copyfile(src, work)
    try:
        m = Mnemo(work, model="e5", scope="project:a")
        t0 = time.perf_counter()
        m._fresh_index()
        m._anchors()
        load = time.perf_counter() - t0
        texts = [f"{q.rstrip('?')} — noted in the lifecycle benchmark {i}" for i, q in enumerate(_corpus.queries()[: args.writes])]
        embed, write, actions = [], [], []
        for t in texts:
            a = time.perf_counter()
            m.embedder.embed_passages([t])
            embed.append(time.perf_counter() - a)
            a = time.perf_counter()
            actions.append(m.remember_many([{"content": t}])[0][1])
            write.append(time.perf_counter() - a)
        gc_times = []
        for _ in range(3):
            a = time.perf_counter()
            report = m.gc(archive_days=0.0001)
            gc_times.append(time.perf_counter() - a)
        m.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)
    ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
    print(f"lifecycle at {args.size:,} memories (index load {load:.2f} s, {len(texts)} writes)")
    print(f"  write with dedup, p50        {ms(write):8.1f} ms   p95 {1000 * sorted(write)[int(0.95 * len(write))]:.1f} ms")
    print(f"  of which embedding, p50      {ms(embed):8.1f} ms")
    print(f"  dedup check + insert, p50    {ms(write) - ms(embed):8.1f} ms   (target: the search budget, 10 ms)")
    print(f"  actions: { {a: actions.count(a) for a in set(actions)} }")
    print(f"  gc dry run over every memory {ms(gc_times):8.1f} ms   ({len(report['archive']):,} candidates listed)")


if __name__ == "__main__":
    main()
