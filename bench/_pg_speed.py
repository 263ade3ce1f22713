"""The PostgreSQL part of ``bench/speed.py`` (``--pg URL``): the same cached synthetic store
copied into PostgreSQL with ``mnemo migrate``'s code path, then, side by side with SQLite:

* search latency p50/p95 (hybrid, vector-only, full-text-only recall given the query vector);
* recall@10 of pgvector's HNSW channel against exact float64 search over the same vectors,
  unfiltered (the query scope: ~92% of rows) and under a 1% filter (a time window), both as
  the core uses it (100 candidates, rescored exactly, top 10) and as a bare top-10.

The PostgreSQL copy is cached as a database named after the SQLite store (delete it to rebuild).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

import numpy as np

K_CAND = 100


def _db_url(server: str, name: str) -> str:
    p = urlsplit(server)
    return urlunsplit((p.scheme, p.netloc, "/" + name, p.query, ""))


def pg_copy(server: str, sqlite_path: Path, n: int, log: Callable[[str], None]) -> tuple[str, dict[str, Any]]:
    """The PostgreSQL copy of ``sqlite_path`` (built once: ``copy_store`` into a fresh database)."""
    import psycopg

    from mnemo._stores.copy import copy_store
    from mnemo._stores.open import open_store

    name = "mnemo_bench_" + sqlite_path.stem.replace("-", "_")
    url = _db_url(server, name)
    info: dict[str, Any] = {"database": name}
    with psycopg.connect(server, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        has_template = admin.execute("SELECT 1 FROM pg_database WHERE datname = 'mnemo_template'").fetchone()
        if exists:
            with psycopg.connect(url) as c:
                ok = c.execute("SELECT to_regclass('memories') IS NOT NULL").fetchone()[0] and \
                    c.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == n
            if ok:
                return url, info
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}" + (" TEMPLATE mnemo_template" if has_template else ""))
    log(f"copying the {n:,}-memory store into PostgreSQL (once, cached as {name})")
    src, dst = open_store(str(sqlite_path), create=False), open_store(url, create=True)
    t = time.perf_counter()
    report = copy_store(src, dst, progress=lambda d, tot: log(f"  copied {d:,}/{tot:,}") if d % 20_000 == 0 else None)
    info["copy_s"] = round(time.perf_counter() - t, 1)
    info["copy_per_s"] = round(n / info["copy_s"], 1)
    dst._execute("VACUUM ANALYZE memories")  # type: ignore[attr-defined]
    src.close()
    dst.close()
    assert report["copied"] == n, report
    return url, info


def _dist(samples: list[list[float]]) -> dict[str, float]:
    p50 = float(np.median([np.percentile(r, 50) for r in samples])) * 1000
    p95 = float(np.median([np.percentile(r, 95) for r in samples])) * 1000
    return {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}


def latency(m: Any, qs: list[str], qvecs: np.ndarray, rounds: int) -> dict[str, dict[str, float]]:
    ops = {
        "hybrid": lambda i: m.recall(qs[i], top_k=10, mode="hybrid", touch=False, _qvec=qvecs[i]),
        "vector": lambda i: m.recall(qs[i], top_k=10, mode="vector", touch=False, _qvec=qvecs[i]),
        "fts": lambda i: m.recall(qs[i], top_k=10, mode="fts", touch=False),
    }
    for i in range(min(10, len(qs))):
        for op in ops.values():
            op(i)
    out = {}
    for name, op in ops.items():
        rounds_s = []
        for _ in range(rounds):
            times = []
            for i in range(len(qs)):
                t = time.perf_counter()
                op(i)
                times.append(time.perf_counter() - t)
            rounds_s.append(times)
        out[name] = _dist(rounds_s)
    return out


def hnsw_recall(store: Any, model: str, scopes: list[str], qvecs: np.ndarray) -> dict[str, Any]:
    """recall@10 of the HNSW channel vs exact float64 search, unfiltered and under a 1% filter."""
    from mnemo._stores.base import Filters

    # pgvector's binary form (int16 dim, int16 unused, big-endian float4s): read as it is stored
    rows = store._q("SELECT pk, scope, created_at, vector_send(vec) FROM memories WHERE status = 'active' AND vec IS NOT NULL ORDER BY pk")
    pks = np.array([r[0] for r in rows], np.int64)
    scope = np.array([r[1] for r in rows])
    created = np.array([r[2] for r in rows])
    mat = np.vstack([np.frombuffer(bytes(r[3])[4:], ">f4") for r in rows]).astype(np.float64)
    vis = np.isin(scope, scopes)
    lo, hi = np.sort(created[vis])[[int(vis.sum() * 0.50), int(vis.sum() * 0.51)]]
    window = vis & (created >= lo) & (created < hi)
    out: dict[str, Any] = {"vectors": len(pks)}
    for label, mask, filt in (
        ("query_scope", vis, Filters(scopes=scopes)),
        ("filter_1pct", window, Filters(scopes=scopes, since=str(lo), until=str(hi))),
    ):
        r_cand, r_bare, r_tie, times = [], [], [], []
        row_of = {int(pk): j for j, pk in enumerate(pks)}
        for v in qvecs:
            s = mat @ v.astype(np.float64)
            s[~mask] = -np.inf
            order = np.argsort(-s, kind="stable")[:10]
            exact = set(pks[order].tolist())
            t = time.perf_counter()
            got = store.vector_search(model, v, filt, K_CAND)[:10]
            times.append(time.perf_counter() - t)
            r_cand.append(len(exact & {pk for pk, _ in got}) / 10)
            r_bare.append(len(exact & {pk for pk, _ in store.vector_search(model, v, filt, 10)}) / 10)
            # the synthetic corpus repeats vectors: a hit tied with the exact 10th is as good as
            # the one it displaced (speed.py counts the same way for SQLite)
            tenth = s[order[-1]]
            r_tie.append(min(10, sum(1 for pk, _ in got if s[row_of[pk]] >= tenth - 1e-6)) / 10)
        out[label] = {"share": round(float(mask.mean()), 4), "recall_at_10_rescored": round(float(np.mean(r_cand)), 4),
                      "recall_at_10_bare": round(float(np.mean(r_bare)), 4), "min_rescored": float(min(r_cand)),
                      "recall_at_10_tie_aware": round(float(np.mean(r_tie)), 4), "min_tie_aware": float(min(r_tie)),
                      "scan_p50_ms": round(float(np.median(times)) * 1000, 2), "scan_p95_ms": round(float(np.percentile(times, 95)) * 1000, 2)}
    return out


def bench(server: str, n: int, emb: Any, qs: list[str], qvecs: np.ndarray, rounds: int, tmp: Path,
          log: Callable[[str], None]) -> dict[str, Any]:
    """PostgreSQL vs SQLite at ``n`` memories (the same store, the same queries and vectors)."""
    import _corpus

    from mnemo import Mnemo

    cached = _corpus.build_store(n, log)
    url, info = pg_copy(server, cached, n, log)
    path = tmp / f"pg-side-{n}.db"
    path.write_bytes(cached.read_bytes())
    res: dict[str, Any] = {"memories": n, **info}
    for label, target in (("sqlite", str(path)), ("postgres", url)):
        m = Mnemo(target, embedder=emb, scope=_corpus.QUERY_SCOPE)
        m._anchors()
        log(f"{n:,} on {label}: latency ({rounds} rounds x {len(qs)} queries)")
        res[label] = latency(m, qs, qvecs, rounds)
        if label == "postgres":
            res["hnsw"] = hnsw_recall(m.store, emb.name, [_corpus.QUERY_SCOPE, "global"], qvecs)
        m.close()
    path.unlink()
    return res


def render(res: dict[str, Any]) -> str:
    n = res["memories"]
    lines = [f"### PostgreSQL + pgvector vs SQLite at {n:,} memories", "",
             "| recall mode | SQLite p50 / p95 ms | PostgreSQL p50 / p95 ms | PG / SQLite (p50) |", "|---|---|---|---|"]
    for mode in ("hybrid", "vector", "fts"):
        s, p = res["sqlite"][mode], res["postgres"][mode]
        lines.append(f"| {mode} | {s['p50_ms']:.1f} / {s['p95_ms']:.1f} | {p['p50_ms']:.1f} / {p['p95_ms']:.1f} | "
                     f"{p['p50_ms'] / s['p50_ms']:.2f} |")
    lines += ["", "| HNSW channel vs exact search | rows visible | recall@10 (100 candidates, rescored) | tie-aware | recall@10 (bare top 10) | scan p50 / p95 ms |",
              "|---|---|---|---|---|---|"]
    for label, name in (("query_scope", "query scope (project + global)"), ("filter_1pct", "1% filter (a time window)")):
        h = res["hnsw"][label]
        lines.append(f"| {name} | {h['share']:.1%} | {h['recall_at_10_rescored']:.3f} (min {h['min_rescored']:.1f}) | "
                     f"{h['recall_at_10_tie_aware']:.3f} (min {h['min_tie_aware']:.1f}) | "
                     f"{h['recall_at_10_bare']:.3f} | {h['scan_p50_ms']:.1f} / {h['scan_p95_ms']:.1f} |")
    if "copy_s" in res:
        lines += ["", f"Copying the store into PostgreSQL (`mnemo migrate`'s code path): {res['copy_s']:.0f} s ({res['copy_per_s']:.0f} memories/s)."]
    return "\n".join(lines)
