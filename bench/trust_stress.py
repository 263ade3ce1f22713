"""Distinct templated notes are never hidden: one by one, and from many processes at once.

    python bench/trust_stress.py [--model e5] [--notes 1000] [--procs 16] [--per-proc 20] [--json OUT]

Notes come from 20 sentence templates (10 English, 10 Chinese) filled with 50 subjects and values
each ("The checkout-07 service listens on port 8107", "worker 7 note 3: …", "订单表 07 的分区保留 37
天"): every note is a different fact, and a write-time rule that reads "same template, other
number" as a repeat or an update hides them. Two runs, on the default SQLite store:

* **sequential**: ``--notes`` notes saved one by one (``remember``, dedup on) into one store; then
  every note must be active and found by a search for its own text (top 5);
* **concurrent**: ``--procs`` processes each save ``--per-proc`` notes of their own (the patterned
  "worker P note I" kind and templates) into one store at the same time; then every note must be
  active, none merged or superseded, and the store's write count must match.

``tests/test_trust_stress.py`` runs a sample of both (100 notes; 4 processes) on every test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mnemo  # noqa: F401  first: it sets OPENBLAS_THREAD_TIMEOUT before numpy loads

TEMPLATES = (
    "The {s} service listens on port {p}.",
    "The {s} team's on-call lead is engineer #{n}.",
    "Nightly backups of the {s} database start at {h}:15 UTC.",
    "The {s} queue keeps messages for {n} hours.",
    "Feature flag {s} is enabled for {n}% of users.",
    "The {s} cluster has {n} nodes with {m} GB of memory each.",
    "worker {n} note {m}: retried the {s} sync job after a timeout",
    "Release {s} is scheduled for day {n} of the sprint.",
    "The {s} API returns at most {n} items per page.",
    "Customer {s} pays {n} dollars per seat per month.",
    "{s} 服务的超时时间是 {n} 秒。",
    "{s} 表的分区保留 {n} 天。",
    "{s} 项目的负责人工号是 {p}。",
    "第 {n} 号工单：{s} 模块的导出在凌晨失败了。",
    "{s} 集群一共有 {n} 台机器。",
    "{s} 接口每分钟最多 {n} 次请求。",
    "{s} 环境的 Redis 端口是 {p}。",
    "{s} 的发布窗口在每月 {n} 号。",
    "任务 {n} 第 {m} 次运行：{s} 数据回填完成。",
    "{s} 组每周例会在 {h} 点开始。",
)
SUBJECTS = tuple(f"{a}-{b:02d}" for a in ("checkout", "billing", "search", "ledger", "media") for b in range(1, 11))  # 50


def note(template: int, k: int) -> str:
    """The ``k``-th filling (0..49) of one template: its own subject and its own values."""
    return TEMPLATES[template].format(s=SUBJECTS[k], p=8000 + template * 50 + k, n=k + 2, m=k % 7 + 1, h=k % 12 + 1)


def notes(count: int) -> list[str]:
    """``count`` distinct notes, spread over all templates (20 x 50 = 1,000 at most)."""
    out = [note(t, k) for k in range(50) for t in range(len(TEMPLATES))]
    assert len(set(out)) == len(out)
    return out[:count]


def sequential(db: str, model: str, count: int) -> dict[str, Any]:
    """Save ``count`` notes one by one; every one must stay active and be found by its own text."""
    from mnemo import Mnemo

    texts = notes(count)
    t0 = time.perf_counter()
    with Mnemo(db, model=model, scope="project:stress") as m:
        actions = [m.remember_many([{"content": t}])[0][1] for t in texts]
        save_s = time.perf_counter() - t0
        active = {x.content for x in m.list(scope="project:stress", limit=count + 10)}
        missing = [t for t in texts if t not in active]
        t1 = time.perf_counter()
        unfound = [t for t in texts if t not in [h.memory.content for h in m.recall(t, top_k=5, touch=False)]]
        recall_s = time.perf_counter() - t1
    return {"notes": count, "active": len(active), "hidden": missing, "not_found": unfound,
            "actions": {a: actions.count(a) for a in sorted(set(actions))}, "save_s": round(save_s, 1), "recall_s": round(recall_s, 1)}


def _worker(db: str, model: str, proc: int, per_proc: int) -> dict[str, int]:
    """One writer process's notes: half "worker P note I", half templates, all its own."""
    from mnemo import Mnemo

    texts = [f"worker {proc} note {i}: 第 {i} 条并发写入 from process {proc}" for i in range(1, per_proc // 2 + 1)]
    texts += [note((proc + i) % len(TEMPLATES), (proc * 7 + i) % 50) + f" (process {proc})" for i in range(per_proc - len(texts))]
    with Mnemo(db, model=model, scope="project:stress") as m:
        acts = [m.remember_many([{"content": t}])[0][1] for t in texts]
    return {a: acts.count(a) for a in set(acts)}


def concurrent(db: str, model: str, procs: int, per_proc: int) -> dict[str, Any]:
    """``procs`` processes save ``per_proc`` notes each at once; none may be merged or superseded."""
    from mnemo import Mnemo

    with Mnemo(db, model=model, scope="project:stress") as m:
        m.remember("warm-up: the store and its anchors exist before the workers start", dedup=False)
    t0 = time.perf_counter()
    # separate interpreters, as parallel assistant sessions are (each loads the model, then all write)
    workers = [subprocess.Popen([sys.executable, __file__, "--worker", json.dumps([db, model, p, per_proc])], stdout=subprocess.PIPE, text=True)
               for p in range(1, procs + 1)]
    results = [json.loads(w.communicate(timeout=1800)[0].strip().splitlines()[-1]) for w in workers]
    took = time.perf_counter() - t0
    actions: dict[str, int] = {}
    for r in results:
        for a, n in r.items():
            actions[a] = actions.get(a, 0) + n
    with Mnemo(db, model=model, scope="project:stress") as m:
        stats = m.stats()
    written = procs * per_proc
    return {"procs": procs, "notes": written, "active": stats["total"] - 1, "by_status": stats["by_status"],
            "actions": actions, "seconds": round(took, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="e5")
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--per-proc", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one concurrent writer, JSON arguments
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(*json.loads(args.worker))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        seq = sequential(str(Path(tmp) / "seq.db"), args.model, args.notes)
        print(f"sequential: {seq['notes']} notes → {seq['active']} active, {len(seq['hidden'])} hidden, "
              f"{len(seq['not_found'])} not found by their own text; actions {seq['actions']}; "
              f"saves {seq['save_s']} s, recalls {seq['recall_s']} s")
        con = concurrent(str(Path(tmp) / "con.db"), args.model, args.procs, args.per_proc)
        print(f"concurrent: {con['procs']} processes x {args.per_proc} = {con['notes']} notes → {con['active']} active; "
              f"statuses {con['by_status']}; actions {con['actions']}; {con['seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"sequential": seq, "concurrent": con}, ensure_ascii=False, indent=1), "utf-8")
    ok = not seq["hidden"] and not seq["not_found"] and con["active"] == con["notes"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
