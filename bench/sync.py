"""Device-to-device sync (``mnemo sync FOLDER``): bootstrap, incremental changes, and kill -9.

    python bench/sync.py [--size 10000] [--rounds 3] [--kills 30] [--chain 10] [--seed 7] [--no-write]

Every device here is a SQLite store opened with the real e5 model (one loaded model object,
shared by the devices of this process and wrapped to count the passages it embeds); device A
starts as a fresh copy of the speed benchmark's cached store of ``--size`` synthetic memories
with e5 vectors (``bench/_corpus.py``). Measured:

* **bootstrap**, per round (fresh copies each round): A syncs into an empty folder ("first
  export"), then B, a brand-new empty store, syncs the folder ("new device"). Checked: B ends
  with A's memories (id, text, kind, scope, tags, status), with a vector for each, with no
  passage embedded by B's model (the vectors travel in the segment), and B writes nothing back.
* **incremental**, per round after the bootstrap: A saves 100 new memories with
  ``remember_many(dedup=False)`` (e5 embeds them there: timed apart, not part of sync), then
  ``A.sync`` (export) and ``B.sync`` (apply) are timed separately; B must embed nothing and end
  equal to A.
* **kills**: a separate A exports the whole store to its own folder; a real ``python -m mnemo
  sync FOLDER`` process (MNEMO_HOME in a scratch folder, MNEMO_DB = device C, MNEMO_MODEL=e5)
  bootstraps C from it. One unkilled run on a scratch C measures its duration T; then
  ``--kills`` runs get SIGKILL at an instant drawn uniformly over [0, T] (the interpreter's start
  included). C keeps what each killed run left, so the next run starts from there; every
  ``--chain`` kills the chain ends with one unkilled ``mnemo sync`` and C starts empty again
  (a run that ends before its kill instant also ends the chain). After each kill: ``mnemo stats
  --json`` exits 0 (and tells how many memories C holds), ``Mnemo(C).doctor()`` reports the
  integrity check ok (the other checks are listed when they fail), and every segment file in
  the folder decodes (a temporary file is named with a leading "."). At the end of each chain
  C must hold exactly A's memories. Last, A syncs once more: whatever C wrote back must change
  nothing on A (same state, no conflicts).

Targets (sync issue): a new device from 10k memories with vectors ≤ 30 s; an incremental sync ≤
1 s plus embedding when the models differ (the same model here: no embedding); no kill leaves an
unopenable store, a damaged folder, or a device that does not converge. Results go to the "Sync"
section of bench/README.md (medians over rounds) unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import mnemo  # noqa: E402,F401  before numpy, as every entry point
from bench import _corpus  # noqa: E402
from bench._readme import write_section  # noqa: E402
from mnemo import Mnemo  # noqa: E402
from mnemo._replica import segments as seg  # noqa: E402

START, END = "<!-- sync:start -->", "<!-- sync:end -->"
ALL = ("active", "superseded", "archived", "deleted")
NEW = 100


def log(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


class Counting:
    """The e5 embedder, counting the passages it embeds (queries are not counted)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.passages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_passages(self, texts: Any) -> Any:
        self.passages += len(texts)
        return self._inner.embed_passages(texts)

    def embed_queries(self, texts: Any) -> Any:
        return self._inner.embed_queries(texts)


def state(m: Mnemo) -> set[tuple[Any, ...]]:
    """What must be equal on converged devices: each memory's id, text, kind, scope, tags, status."""
    return {(x.id, x.content, x.type, x.scope, tuple(sorted(x.tags)), x.status, x.superseded_by)
            for x in m.list(scope="all", statuses=ALL, limit=1_000_000)}


def folder_check(folder: Path) -> tuple[bool, int, int, list[str]]:
    """(every segment decodes, segments, temporary files, problems)."""
    problems: list[str] = []
    segments = temps = 0
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.name.startswith("."):
            temps += 1
            continue
        n = seg.segment_number(path.name)
        if n is None:
            problems.append(f"{path.relative_to(folder)}: not a segment name")
            continue
        segments += 1
        try:
            s = seg.decode(path.read_bytes())
            if s.device != path.parent.name or s.number != n:
                problems.append(f"{path.relative_to(folder)}: header names {s.device}/{s.number}")
        except seg.SegmentError as exc:
            problems.append(f"{path.relative_to(folder)}: {exc}")
    return not problems, segments, temps, problems


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def new_texts(r: int) -> list[str]:
    en, zh = _corpus.real_texts()
    rng = random.Random(1000 + r)
    picks = rng.sample(en, NEW - 10) + rng.sample(zh, 10)
    return [f"{t} (noted on device A, round {r + 1}, #{i})" for i, t in enumerate(picks)]


# ---------------------------------------------------------------- bootstrap and incremental


def one_round(r: int, src: Path, tmp: Path, emb: Counting) -> dict[str, Any]:
    d = tmp / f"round{r}"
    d.mkdir()
    a_path, b_path, folder = d / "a.db", d / "b.db", d / "shared"
    shutil.copyfile(src, a_path)
    out: dict[str, Any] = {}
    a = Mnemo(a_path, embedder=emb)
    b = None
    try:
        a_stats = a.stats()
        t0 = time.perf_counter()
        rep = a.sync(folder)
        out["export_s"] = time.perf_counter() - t0
        out["export_pushed"] = rep["pushed"]
        out["folder_bytes"] = folder_bytes(folder)
        want = state(a)

        b = Mnemo(b_path, embedder=emb)  # a brand-new store
        emb.passages = 0
        t0 = time.perf_counter()
        rep = b.sync(folder)
        out["bootstrap_s"] = time.perf_counter() - t0
        out["bootstrap_embedded"] = emb.passages
        out["bootstrap_written_back"] = rep["pushed"]
        out["bootstrap_skipped"] = rep["skipped"]
        b_stats = b.stats()
        out["a_memories"], out["b_memories"] = a_stats["all_records"], b_stats["all_records"]
        out["a_vectors"], out["b_vectors"] = a_stats["vectors"], b_stats["vectors"]
        out["b_model"], out["a_model"] = b_stats["model"], a_stats["model"]
        out["b_missing_vectors"] = b.store.count_missing_embeddings(emb.name)
        out["bootstrap_equal"] = state(b) == want
        log(f"  round {r + 1}: export {out['export_s']:.2f} s ({out['export_pushed']:,} records, "
            f"{out['folder_bytes'] / 2**20:.1f} MiB), bootstrap {out['bootstrap_s']:.2f} s "
            f"({out['b_memories']:,} memories, {out['b_vectors']:,} vectors, {out['bootstrap_embedded']} embedded, "
            f"equal {out['bootstrap_equal']})")

        t0 = time.perf_counter()
        saved = a.remember_many([{"content": t} for t in new_texts(r)], dedup=False)
        out["save_s"] = time.perf_counter() - t0
        out["save_actions"] = sorted({act for _, act in saved})
        t0 = time.perf_counter()
        rep = a.sync(folder)
        out["inc_export_s"] = time.perf_counter() - t0
        out["inc_pushed"] = rep["pushed"]
        emb.passages = 0
        t0 = time.perf_counter()
        rep = b.sync(folder)
        out["inc_apply_s"] = time.perf_counter() - t0
        out["inc_applied"] = rep["records_applied"]
        out["inc_embedded"] = emb.passages
        out["inc_written_back"] = rep["pushed"]
        out["inc_equal"] = state(b) == state(a)
        log(f"  round {r + 1}: save {NEW} {out['save_s']:.2f} s, incremental export {out['inc_export_s'] * 1000:.0f} ms "
            f"({out['inc_pushed']} records), apply {out['inc_apply_s'] * 1000:.0f} ms ({out['inc_applied']} records, "
            f"{out['inc_embedded']} embedded, equal {out['inc_equal']})")
    finally:
        a.close()
        if b is not None:
            b.close()
    shutil.rmtree(d, ignore_errors=True)
    return out


# ---------------------------------------------------------------- kills


def _env(tmp: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(tmp / "home"), MNEMO_DB=str(db), MNEMO_MODEL="e5", XDG_RUNTIME_DIR=str(tmp / "run"))
    return env


def _sync_cmd(folder: Path) -> list[str]:
    return [sys.executable, "-m", "mnemo", "sync", str(folder), "--json"]


def unkilled(folder: Path, env: dict[str, str], timeout: float = 900) -> tuple[float, int, dict[str, Any] | str]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(_sync_cmd(folder), env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:  # subprocess.run kills it
        return time.perf_counter() - t0, -1, f"did not finish within {timeout:.0f} s"
    dt = time.perf_counter() - t0
    try:
        return dt, p.returncode, json.loads(p.stdout)
    except ValueError:
        return dt, p.returncode, (p.stderr or p.stdout)[-400:]


def check_store(db: Path, env: dict[str, str], emb: Counting) -> dict[str, Any]:
    """After a kill: ``mnemo stats --json`` and ``doctor()``; a kill before the store file was
    made leaves nothing to check (nothing is created here)."""
    if not db.exists():
        return {"stats_rc": 0, "records": None, "vectors": None, "stats_err": "", "integrity": "ok", "doctor_fails": [],
                "no_store": True}
    p = subprocess.run([sys.executable, "-m", "mnemo", "stats", "--json"], env=env, capture_output=True, text=True, timeout=300)
    out: dict[str, Any] = {"stats_rc": p.returncode, "records": None, "vectors": None, "stats_err": "", "no_store": False}
    if p.returncode == 0:
        try:
            st = json.loads(p.stdout)
            out["records"], out["vectors"] = st.get("all_records"), st.get("vectors")
        except ValueError:
            out["stats_err"] = "stats --json printed no JSON"
    else:
        out["stats_err"] = (p.stderr or p.stdout)[-300:].strip()
    try:
        with Mnemo(db, embedder=emb, create=False) as m:
            checks = m.doctor()
        by = {c["check"]: c for c in checks}
        out["integrity"] = by.get("integrity", {}).get("status", "missing")
        out["doctor_fails"] = [f"{c['check']}: {c['detail']}" for c in checks if c["status"] == "fail"]
    except Exception as exc:  # an unopenable store is a finding, not a crash of the benchmark
        out["integrity"] = f"open failed: {type(exc).__name__}: {exc}"
        out["doctor_fails"] = [out["integrity"]]
    return out


def kill_phase(src: Path, tmp: Path, emb: Counting, kills: int, chain: int, seed: int) -> dict[str, Any]:
    d = tmp / "kills"
    d.mkdir()
    folder = d / "shared"
    a_path = d / "a.db"
    shutil.copyfile(src, a_path)
    res: dict[str, Any] = {"trials": [], "chains": [], "completed_early": 0}
    with Mnemo(a_path, embedder=emb) as a:
        a_device = a.sync(folder)["device"]
        want = state(a)
        want_vectors = a.stats()["vectors"]

        # the unkilled run that sets the kill window
        c0 = d / "c0.db"
        T, rc, rep = unkilled(folder, _env(d, c0))
        with Mnemo(c0, embedder=emb) as c:
            ok0 = state(c) == want
        res["T"], res["T_ok"] = T, rc == 0 and ok0
        final_limit = max(120.0, 15 * T)  # an unkilled sync that takes longer is reported, not waited for
        res["final_limit"] = final_limit
        log(f"  unkilled `mnemo sync` bootstrap of C: {T:.1f} s (rc {rc}, equal to A {ok0})")
        if rc != 0:
            log(f"    {rep}")
        for p in d.glob("c0.db*"):
            p.unlink()

        rng = random.Random(seed)
        chain_no, in_chain, attempts = 0, 0, 0
        c_path = d / f"c{chain_no + 1}.db"

        def end_chain(completed_by_kill_run: bool) -> None:
            nonlocal chain_no, in_chain, c_path
            env = _env(d, c_path)
            if completed_by_kill_run:
                dt, rc, rep = 0.0, 0, {}
            else:
                dt, rc, rep = unkilled(folder, env, timeout=final_limit)
            with Mnemo(c_path, embedder=emb, create=False) as c:
                got = state(c)
                vec = c.stats()["vectors"]
                c_model = c.stats()["model"]
            ok = rc == 0 and got == want
            info = {"chain": chain_no + 1, "kills": in_chain, "final_s": dt, "rc": rc, "converged": ok,
                    "missing": len({x[0] for x in want} - {x[0] for x in got}), "extra": len({x[0] for x in got} - {x[0] for x in want}),
                    "differing": len(got ^ want), "vectors": vec, "want_vectors": want_vectors,
                    "written_back": rep.get("pushed", "—") if isinstance(rep, dict) else "?", "model": c_model,
                    "error": "" if rc == 0 else str(rep)}
            res["chains"].append(info)
            log(f"  chain {chain_no + 1}: {in_chain} kills, final sync {dt:.1f} s rc {rc}, converged {ok} "
                f"(missing {info['missing']}, extra {info['extra']}, differing {info['differing']}, vectors {vec}/{want_vectors}, "
                f"written back {info['written_back']})")
            chain_no += 1
            in_chain = 0
            c_path = d / f"c{chain_no + 1}.db"

        while len(res["trials"]) < kills and attempts < 3 * kills:
            attempts += 1
            env = _env(d, c_path)
            at = rng.uniform(0.0, T)
            before = c_path.exists()
            proc = subprocess.Popen(_sync_cmd(folder), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t0 = time.perf_counter()
            try:
                proc.wait(timeout=at)
                # it ended before the kill instant: the chain is complete
                res["completed_early"] += 1
                log(f"  run ended before its kill instant {at:.2f} s (rc {proc.returncode}); ending chain {chain_no + 1}")
                if proc.returncode == 0:
                    end_chain(True)
                continue
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            killed_at = time.perf_counter() - t0
            in_chain += 1
            chk = check_store(c_path, env, emb)
            fok, nseg, ntmp, problems = folder_check(folder)
            trial = {"n": len(res["trials"]) + 1, "chain": chain_no + 1, "at": killed_at, "store_existed": before, **chk,
                     "folder_ok": fok, "segments": nseg, "temps": ntmp, "problems": problems}
            res["trials"].append(trial)
            log(f"  kill {trial['n']:>2} (chain {chain_no + 1}) at {killed_at:5.2f} s: "
                + ("no store file yet, " if chk["no_store"] else "") + f"records {chk['records']}, "
                f"vectors {chk['vectors']}, stats rc {chk['stats_rc']}, integrity {chk['integrity']}, "
                f"folder ok {fok} ({nseg} segments, {ntmp} temp files)"
                + (f" DOCTOR FAILS {chk['doctor_fails']}" if chk["doctor_fails"] else "")
                + (f" FOLDER {problems}" if problems else "") + (f" STATS {chk['stats_err']}" if chk["stats_err"] else ""))
            if in_chain >= chain:
                end_chain(False)
        if in_chain:
            end_chain(False)

        # whatever C wrote back must change nothing on A
        before_conflicts = len(a.sync_status(folder)["conflicts"])
        rep = a.sync(folder)
        res["a_after"] = {"applied": rep["records_applied"], "segments": rep["segments_applied"], "conflicts": rep["conflicts"],
                          "equal": state(a) == want, "status_conflicts": len(a.sync_status(folder)["conflicts"]) - before_conflicts,
                          "skipped": rep["skipped"]}
        log(f"  A applies what the C devices wrote: {res['a_after']}")
    fok, nseg, ntmp, problems = folder_check(folder)
    res["folder_final"] = (fok, nseg, ntmp, problems)
    echo = [seg.decode(p.read_bytes()) for p in folder.glob("*/*.seg") if p.parent.name != a_device]
    res["echo"] = (len(echo), sum(len(x.records) for x in echo),
                   sum(1 for x in echo for r in x.records if r.get("op") == "put" and not r.get("vector")))
    shutil.rmtree(d, ignore_errors=True)
    return res


# ---------------------------------------------------------------- main


def main() -> None:
    from mnemo._recall.embed import make_embedder

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000, help="memories on device A")
    ap.add_argument("--rounds", type=int, default=3, help="bootstrap + incremental rounds")
    ap.add_argument("--kills", type=int, default=30, help="kill -9 of a bootstrapping `mnemo sync` (0: skip)")
    ap.add_argument("--chain", type=int, default=10, help="kills on one device C before an unkilled sync ends its chain")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-write", action="store_true", help="do not update bench/README.md")
    ap.add_argument("--note", default="", help="a sentence on the run's conditions, added to bench/README.md")
    args = ap.parse_args()

    src = _corpus.build_store(args.size, log=log)
    tmp = Path(tempfile.mkdtemp(prefix="mnemo-sync-"))
    load_before = os.getloadavg()[0]
    t_start = time.perf_counter()
    emb = Counting(make_embedder("e5"))
    emb.embed_passages(["warm the model"])  # loaded once, outside every timing
    try:
        log(f"bootstrap and incremental, {args.rounds} rounds, {args.size:,} memories")
        rounds = [one_round(r, src, tmp, emb) for r in range(args.rounds)]
        log(f"kills: {args.kills}, chains of {args.chain}")
        k = kill_phase(src, tmp, emb, args.kills, args.chain, args.seed) if args.kills else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.perf_counter() - t_start

    med = lambda key: statistics.median(r[key] for r in rounds)  # noqa: E731
    mx = lambda key: max(r[key] for r in rounds)  # noqa: E731
    r0 = rounds[0]
    boot_ok = all(r["bootstrap_equal"] and r["b_memories"] == r["a_memories"] and r["b_missing_vectors"] == 0 for r in rounds)
    inc_ok = all(r["inc_equal"] for r in rounds)
    n = args.size
    rows = [
        "| measure | result | target |", "|---|---|---|",
        f"| first export of {n:,} (A → empty folder), median / max | {med('export_s'):.1f} s / {mx('export_s'):.1f} s "
        f"({r0['export_pushed']:,} records, {r0['folder_bytes'] / 2**20:.0f} MiB segment) | — |",
        f"| new device from {n:,} memories with vectors (B, empty, applies the folder), median / max "
        f"| {med('bootstrap_s'):.1f} s / {mx('bootstrap_s'):.1f} s | ≤ 30 s |",
        f"| B after the bootstrap (each round) | {r0['b_memories']:,} memories (A: {r0['a_memories']:,}), "
        f"{r0['b_vectors']:,} vectors (A: {r0['a_vectors']:,}), {r0['b_missing_vectors']} without a vector, "
        f"{max(r['bootstrap_embedded'] for r in rounds)} passages embedded by B, {max(r['bootstrap_written_back'] for r in rounds)} "
        f"records written back; same state as A: {'yes' if boot_ok else 'NO'}; index model recorded in B's store: "
        f"{r0['b_model'] or 'NONE'} (A: {r0['a_model']}) | equal, with vectors |",
        f"| A saves {NEW} new memories (`remember_many`, e5 embeds them; not sync) | {med('save_s'):.1f} s | — |",
        f"| incremental export (A.sync, {r0['inc_pushed']} records), median / max | {med('inc_export_s') * 1000:.0f} ms / "
        f"{mx('inc_export_s') * 1000:.0f} ms | ≤ 1 s |",
        f"| incremental apply (B.sync, {r0['inc_applied']} records), median / max | {med('inc_apply_s') * 1000:.0f} ms / "
        f"{mx('inc_apply_s') * 1000:.0f} ms; {max(r['inc_embedded'] for r in rounds)} embedded; equal: {'yes' if inc_ok else 'NO'} "
        f"| ≤ 1 s (same model) |",
    ]
    kill_lines: list[str] = []
    if k:
        tr = k["trials"]
        nk = len(tr)
        opened = sum(1 for t in tr if t["stats_rc"] == 0)
        integ = sum(1 for t in tr if t["integrity"] == "ok")
        doc_clean = sum(1 for t in tr if not t["doctor_fails"])
        fold = sum(1 for t in tr if t["folder_ok"])
        conv = sum(1 for c in k["chains"] if c["converged"])
        a_after = k["a_after"]
        rows += [
            f"| `mnemo sync` bootstrap of a new device as a process (C, unkilled; interpreter start included) | {k['T']:.1f} s "
            f"(equal to A: {'yes' if k['T_ok'] else 'NO'}) | — |",
            f"| kill -9 at uniform instants over [0, {k['T']:.1f} s] | {nk} kills ({k['completed_early']} runs ended before "
            f"their instant); store opens (`mnemo stats`) {opened}/{nk}; doctor integrity ok {integ}/{nk}; doctor with no failed "
            f"check {doc_clean}/{nk}; folder decodes, no half-written segment {fold}/{nk} | all |",
            f"| convergence after the kills (one unkilled `mnemo sync` per chain) | {conv}/{len(k['chains'])} chains equal to A; "
            f"A then applies what C wrote: {a_after['applied']} records, {a_after['conflicts']} conflicts, A unchanged: "
            f"{'yes' if a_after['equal'] else 'NO'} | all, no conflicts |",
        ]
        def got(t: dict[str, Any]) -> str:
            return "no file yet" if t["no_store"] else (f"{t['records']:,}" if t["records"] is not None else "?")

        prog = "; ".join(f"chain {c['chain']}: " + ", ".join(f"{t['at']:.1f} s → {got(t)}" for t in tr if t["chain"] == c["chain"])
                         for c in k["chains"])
        kill_lines.append(f"Kills in order (instant → memories in C right after; \"no file yet\": killed before the store "
                          f"file was made, {sum(1 for t in tr if t['no_store'])} of {nk}): {prog}.")
        for c in k["chains"]:
            if not c["converged"]:
                kill_lines.append(f"Chain {c['chain']} did NOT converge: rc {c['rc']}, missing {c['missing']}, extra {c['extra']}, "
                                  f"differing {c['differing']} {c['error']}")
        kill_lines.append(f"Written to the folder by the C devices over the whole phase (killed runs included): "
                          f"{k['echo'][1]:,} records in {k['echo'][0]} segments, {k['echo'][2]:,} of them without a vector.")
        if a_after["conflicts"]:
            kill_lines.append(
                f"**Spurious conflicts.** Nothing was edited on any device in this phase, yet A recorded {a_after['conflicts']:,} "
                "conflicts (a `sync_conflict` event in each of those memories' histories; `mnemo sync --status` lists them). "
                "Cause: a kill after some of `_insert_new`'s insert batches committed but before its transaction that records "
                "their sync versions leaves those memories on C with no version; C's next sync takes them for local changes and "
                "pushes them as its own new versions (base none); A, their origin, sees a later version not derived from its own "
                "and records a conflict for each, then adopts C's identical copy. No memory is lost or changed (A's state above).")
        if any(not r["b_model"] for r in rounds) or any(not c["model"] for c in k["chains"]):
            kill_lines.append(
                "**A device bootstrapped by sync does not record its index model.** B and the C devices hold every vector "
                "but their store's `embedder`/`dim` meta stays empty (`stats()['model']` is None; `_accept_vector` stores "
                "shipped vectors without `_claim_model`, and nothing is embedded there to claim it). Their `_push` reads the "
                "model from that meta, so what they write to the folder carries no vectors, and a device that applies such a "
                "record for a memory it does not have embeds it with its own model.")
        kill_lines.append("Final sync per chain (— : the chain ended with a run that finished before its kill instant): " + ", ".join(f"{c['final_s']:.1f} s (vectors {c['vectors']:,}/{c['want_vectors']:,}, "
                                                               f"wrote back {c['written_back']})" for c in k["chains"]) + f" (limit {k['final_limit']:.0f} s each).")
        bad = [t for t in tr if t["doctor_fails"] or not t["folder_ok"] or t["stats_rc"]]
        for t in bad:
            kill_lines.append(f"Kill {t['n']} at {t['at']:.2f} s: stats rc {t['stats_rc']} {t['stats_err']}; doctor fails "
                              f"{t['doctor_fails']}; folder {t['problems']}")
    table = "\n".join(rows)
    load_s = f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(table)
    for line in kill_lines:
        print(line)
    print(f"{load_s}; whole run {elapsed / 60:.1f} min")
    if args.no_write:
        return
    section = (
        f"{START}\n## Sync — `bench/sync.py`\n\n"
        f"Devices are SQLite stores with the real e5 model; A starts as a copy of the cached {n:,}-memory store "
        f"(e5 vectors), B and C as new empty stores. {args.rounds} rounds (fresh copies each), medians; "
        f"{args.kills} kill -9 of a real `mnemo sync` bootstrapping C, in chains of {args.chain} kills on the same C, "
        f"each chain ended by one unkilled sync. Latest run ({load_s}; whole run {elapsed / 60:.1f} min):\n\n{table}\n\n"
        + "\n\n".join(kill_lines) + "\n"
        + (f"\n{args.note}\n" if args.note else "") + f"{END}\n"
    )
    write_section(START, END, section)


if __name__ == "__main__":
    main()
