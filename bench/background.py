"""Bulk ingest with background vectors: how soon the text is searchable, how long the vectors take.

The real command line on a fresh store with the bundled e5 model:

1. ``mnemo ingest FOLDER --vectors later`` over generated Markdown notes (``bench/ingest.py``'s
   corpus, Chinese and English) sized to about ``--chunks`` chunks: wall time until the command
   returns (target: 10k chunks in ≤ 30 s), then a search for a sentence of the last file, which
   must find it at once (its words; no vector yet).
2. The warm service fills the vectors in the background: ``mnemo stats`` polled until nothing
   waits; chunks/s. Meanwhile warm ``mnemo search`` calls are timed (a person keeps working),
   and again once the fill is done.
3. The baseline measured in the same run: ``--vectors now`` (the model inside the command) on a
   ``--baseline-chunks`` subset, in chunks/s, so the ratio holds on a busy machine.

    python bench/background.py                      # ~10k chunks; the fill takes minutes
    python bench/background.py --chunks 2000 --fill-timeout 120
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import generate  # noqa: E402

from mnemo._ingest.chunk import chunk_markdown  # noqa: E402

#: megabytes of the corpus chunked to learn how many chunks a megabyte makes
PROBE_MB = 0.2
#: the one sentence searched for right after the ingest returns
PROBE = "The quokka deployment token rotates every 41 days"


def mnemo(env: dict[str, str], *args: str, timeout: float = 900) -> tuple[float, Any]:
    """Run ``mnemo --json ARGS``; (seconds, parsed JSON)."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mnemo", "--json", *args], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=env["MNEMO_HOME"])  # outside any repository: one scope (global) for every call
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"mnemo {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, json.loads(proc.stdout) if proc.stdout.strip() else None


def chunks_per_mb(tmp: Path) -> float:
    probe = tmp / "probe"
    generate(probe, PROBE_MB, seed=3)
    n = sum(len(chunk_markdown(p.read_text("utf-8"), chunk_chars=512)) for p in probe.rglob("*.md"))
    shutil.rmtree(probe)
    return n / PROBE_MB


def search_times(env: dict[str, str], queries: list[str]) -> list[float]:
    return [mnemo(env, "search", q, "-k", "5")[0] for q in queries]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--baseline-chunks", type=int, default=400)
    ap.add_argument("--fill-timeout", type=float, default=1200.0, help="stop waiting for the background fill after this many seconds")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mnemo-bg-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(tmp / "home"), MNEMO_MODEL="e5", MNEMO_SERVE_IDLE_SECONDS="900")
    (tmp / "home").mkdir()
    res: dict[str, Any] = {"load_average_start": os.getloadavg()[0]}
    try:
        per_mb = chunks_per_mb(tmp)
        # -- baseline: the model inside the command
        base = tmp / "base"
        generate(base, args.baseline_chunks / per_mb, seed=11)
        b_env = {**env, "MNEMO_DB": str(tmp / "base.db")}
        took, rep = mnemo(b_env, "ingest", str(base), "--vectors", "now")
        res["now"] = {"chunks": rep["chunks"], "seconds": round(took, 1), "chunks_per_s": round(rep["chunks"] / took, 1)}
        print(f"--vectors now: {rep['chunks']} chunks in {took:.1f} s ({rep['chunks'] / took:.1f}/s)", flush=True)

        # -- background: the text first, the vectors from the warm service
        corpus = tmp / "notes"
        generate(corpus, args.chunks / per_mb, seed=7)
        (corpus / "zz-last.md").write_text(f"# Secrets\n\n{PROBE}\n", "utf-8")  # a sentence no other chunk has, written last
        w_env = {**env, "MNEMO_DB": str(tmp / "bulk.db")}
        mnemo(w_env, "save", "The staging database is Postgres 16 on port 5433")  # a store with a model, as a user's is
        took, rep = mnemo(w_env, "ingest", str(corpus), "--vectors", "later")
        print(f"--vectors later: {rep['chunks']} chunks in {took:.1f} s; {rep.get('vectors_pending')} vectors pending "
              f"({rep.get('vectors_by')})", flush=True)
        s_took, hits = mnemo(w_env, "search", "quokka token rotation", "-k", "5")
        found = any(PROBE in h["content"] for h in (hits or {}).get("results", []))
        res["later"] = {"chunks": rep["chunks"], "seconds": round(took, 1), "vectors_pending": rep.get("vectors_pending"),
                        "vectors_by": rep.get("vectors_by"), "searchable_at_once": found, "first_search_s": round(s_took, 2)}
        print(f"the sentence of the last file found at once: {found} ({s_took:.2f} s)", flush=True)

        queries = ["数据库备份在什么时候", "how do we roll back a release", "缓存雪崩怎么避免", "p99 latency under load",
                   "on-call rotation", "分区表", "feature flags default", "连接重置错误"]
        during: list[float] = []
        t0 = time.perf_counter()
        pending = rep.get("vectors_pending") or 0
        trace = []
        while pending and time.perf_counter() - t0 < args.fill_timeout:
            during += search_times(w_env, queries[:2])
            time.sleep(5)
            pending = mnemo(w_env, "stats")[1]["vectors_pending"] or 0
            trace.append((round(time.perf_counter() - t0, 1), pending))
            print(f"  {trace[-1][0]:7.1f} s: {pending} waiting", flush=True)
        fill_s = time.perf_counter() - t0
        filled = (rep.get("vectors_pending") or 0) - pending
        after = search_times(w_env, queries) + search_times(w_env, queries)
        res["fill"] = {"seconds": round(fill_s, 1), "filled": filled, "left": pending, "chunks_per_s": round(filled / fill_s, 1) if fill_s else None,
                       "trace": trace[:: max(1, len(trace) // 20)]}
        res["search_during_fill_p50_s"] = round(statistics.median(during), 3) if during else None
        res["search_after_fill_p50_s"] = round(statistics.median(after), 3)
        res["later_over_now_return_speed"] = round((rep["chunks"] / res["later"]["seconds"]) / res["now"]["chunks_per_s"], 1)
        res["load_average_end"] = os.getloadavg()[0]
        print(json.dumps(res, indent=1))
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1), "utf-8")
    finally:
        subprocess.run([sys.executable, "-m", "mnemo", "serve", "--stop"], env={**env, "MNEMO_DB": str(tmp / "bulk.db")},
                       capture_output=True, timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
