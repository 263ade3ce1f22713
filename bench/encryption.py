"""Search on an encrypted store against the same store unencrypted (same run, same queries).

    python bench/encryption.py                 # 10k memories
    python bench/encryption.py --sizes 10000,100000

The plain store is the speed benchmark's cached synthetic store (``bench/_corpus.py``); the
encrypted one is a copy converted with ``mnemo._stores.sqlite_rekey.convert`` (SQLite3 Multiple Ciphers,
ChaCha20-Poly1305). Measured: opening and loading the vector index (every page of vectors is
decrypted), hybrid recall with a precomputed query vector (the full-text channel reads encrypted
pages), and the FTS channel alone. Medians over rounds; ratios are encrypted / plain.
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

from bench import _corpus  # noqa: E402
from mnemo import Mnemo  # noqa: E402
from mnemo._stores.sqlite_rekey import convert  # noqa: E402

KEY = "bench-key-not-secret"


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(path: Path, key: str | None, qvecs: list, queries: list[str], rounds: int) -> dict[str, float]:
    opens, hybrid, fts = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        m = Mnemo(path, model="e5", key=key)
        m._fresh_index()
        m._anchors()
        opens.append(time.perf_counter() - t0)
        h, f = [], []
        for q, v in zip(queries, qvecs):
            t = time.perf_counter()
            m.recall(q, top_k=10, scope="project:a", touch=False, _qvec=v)
            h.append(time.perf_counter() - t)
            t = time.perf_counter()
            m.recall(q, top_k=10, scope="project:a", touch=False, mode="fts")
            f.append(time.perf_counter() - t)
        hybrid.append((statistics.median(h), _p(h, 0.95)))
        fts.append((statistics.median(f), _p(f, 0.95)))
        m.close()
    return {
        "open_and_load_s": statistics.median(opens),
        "hybrid_p50_ms": 1000 * statistics.median(x[0] for x in hybrid),
        "hybrid_p95_ms": 1000 * statistics.median(x[1] for x in hybrid),
        "fts_p50_ms": 1000 * statistics.median(x[0] for x in fts),
        "fts_p95_ms": 1000 * statistics.median(x[1] for x in fts),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=150)
    args = ap.parse_args()
    queries = _corpus.queries()[: args.queries]
    probe = Mnemo(_corpus.CACHE / "probe.db", model="e5")
    qvecs = list(probe._embed(queries, query=True))
    probe.close()
    for p in _corpus.CACHE.glob("probe.db*"):
        p.unlink()
    print("search on an encrypted store vs the same store unencrypted (medians; ratio = encrypted / plain)")
    for n in (int(x) for x in args.sizes.split(",")):
        plain = _corpus.build_store(n, log=lambda s: print(s, file=sys.stderr))
        enc = plain.with_name(f"encrypted-{plain.name}")
        if not enc.exists():
            shutil.copyfile(plain, enc)
            convert(enc, old_key=None, new_key=KEY)
        a = measure(plain, None, qvecs, queries, args.rounds)
        b = measure(enc, KEY, qvecs, queries, args.rounds)
        print(f"\n{n:,} memories, {len(queries)} questions × {args.rounds} rounds")
        print(f"  {'':28} {'plain':>10} {'encrypted':>10} {'ratio':>7}")
        for k, unit in (("open_and_load_s", "s"), ("hybrid_p50_ms", "ms"), ("hybrid_p95_ms", "ms"), ("fts_p50_ms", "ms"), ("fts_p95_ms", "ms")):
            print(f"  {k:28} {a[k]:>8.3f} {unit:<2} {b[k]:>8.3f} {unit:<2} {b[k] / a[k]:>6.2f}x")


if __name__ == "__main__":
    main()
