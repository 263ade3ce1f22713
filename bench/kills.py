"""kill -9 at any instant of the write commands and the warm service: nothing acknowledged is lost.

    python bench/kills.py                                   # 30 random kills per command
    python bench/kills.py --kills 40 --commands save,purge --seed 7

Covers `mnemo save`, `import`, `ingest`, `reindex`, `purge` and `serve`. Each trial starts from a
fresh copy of one mnemo home (a store of N memories built with the fake embedder; for `reindex`
the same store indexed by another model name, so the run re-embeds every memory; for `purge`, 20
memories holding PURGE_MARKER to erase). The command runs as a real subprocess (`python -m mnemo
… --model plugin:fake_embedder:FakeEmbedder`, MNEMO_HOME in a scratch folder) and gets SIGKILL at
an instant drawn over its measured unkilled run (a third over the whole run, two thirds after the
imports and the store's open, as a `mnemo stats` run measures them):

* save: a loop of `mnemo save --json` processes, one after another; the kill lands in one of
  them. Every save that printed its result must be in the store (by id), then the killed text is
  saved again and must be there too.
* import: a JSONL file of 2,000 records. After the kill, the imported records present must be
  whole batches (a multiple of the import batch, or all), every one with its index (doctor's
  vectors check, a full-text `mnemo search` finds a sample); the rerun must leave all 2,000 once.
* ingest: a folder of 50 Markdown notes. After the kill, a `mnemo search` finds a sample of what
  is there; the rerun must leave exactly the active chunks an unkilled run leaves.
* reindex: after the kill the store must still answer a search; the rerun must leave every
  memory with a vector of the configured model (doctor all ok).
* purge: 20 ids. After the kill each is either there or gone; the rerun (the same command, or
  with only the ids still there when all were already gone — what the user can run) must leave
  them gone, and no file of the home (the store, -wal, -shm, backups, …) may hold PURGE_MARKER.
* serve: a service answers `mnemo hook user-prompt` calls from a loop; it is killed while they
  run. Every hook must still answer with the memory (in-process when the service is gone), the
  next hook must answer, and a new `mnemo serve` must start (no stale socket or lock), answer a
  hook, and stop.

After every kill: `mnemo stats --json` opens the store, and `mnemo doctor --json` reports no
failed check that the starting store did not already fail. Prints per command: kills, kills that
landed while the process ran, failures by kind; every failure with its seed and trial number
(`--commands CMD --seed S --only N` replays it). Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from conversion_kills import MODEL, run_in_process  # the fake embedder's plugin spec; the in-process CLI

COMMANDS = ("save", "import", "ingest", "reindex", "purge", "serve")
PURGE_MARKER = "PURGEKILL-MARKER-9d2f"
RECORDS = 2000
NOTES = 50
PURGED = 20
SAVES = 6
HOOKS = 12
SERVE_FACT = "We use PostgreSQL 16 for the main database"


# ---------------------------------------------------------------- running mnemo


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(home), MNEMO_MODEL=MODEL, MNEMO_SERVE_IDLE_SECONDS="0", XDG_RUNTIME_DIR=str(home.parent / "run"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.update(extra or {})
    return env


def argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "mnemo", *args]


def mnemo(home: Path, *args: str, stdin: str | None = None, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`mnemo ARGS` as a subprocess, run in the home's parent (no git project: global scope)."""
    return subprocess.run(argv(*args), env=_env(home, env), cwd=home.parent, input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False)


#: run the checks and reruns in this process (the same code path as the command line, without
#: the start-up of a new Python each time); the killed commands always run as subprocesses
IN_PROCESS = False


def check_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mnemo ARGS` for a check or a rerun: a subprocess, or in this process when IN_PROCESS."""
    if not IN_PROCESS:
        return mnemo(home, *args)
    return run_in_process(_env(home), args, cwd=home.parent)


def killed_after(cmd: list[str], home: Path, delay: float, *, env: dict[str, str] | None = None) -> tuple[bool, subprocess.CompletedProcess[str]]:
    """Start CMD and SIGKILL it after ``delay`` seconds; (was it still running, what it printed)."""
    proc = subprocess.Popen(cmd, env=_env(home, env), cwd=home.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(timeout=delay)
        alive = False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        alive = True
    out, err = proc.communicate()
    return alive, subprocess.CompletedProcess(cmd, proc.returncode, out, err)


#: runs `mnemo ARGS` and dies (``os._exit(137)``) just before line KILLS_LINE of the file KILLS_FILE
BEFORE_LINE = r"""
import os, sys
FILE, LINE = os.environ["KILLS_FILE"], int(os.environ["KILLS_LINE"])
def local(frame, event, arg):
    if event == "line" and frame.f_lineno == LINE:
        os._exit(137)
    return local
def tracer(frame, event, arg):
    return local if frame.f_code.co_filename.endswith(FILE) else None
sys.settrace(tracer)
sys.argv = ["mnemo", *sys.argv[1:]]
from mnemo.__main__ import launch
launch()
"""


def line_of(relpath: str, text: str) -> int:
    """The line of ``src/mnemo/RELPATH`` that holds ``text`` (once)."""
    lines = [n for n, line in enumerate((ROOT / "src" / "mnemo" / relpath).read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (relpath, text, lines)
    return lines[0]


#: where a directed kill of `mnemo purge` lands: after its transaction commits, before the scrub
#: (full-text merge, VACUUM, WAL truncation) that removes the old pages
PURGE_POINTS = {
    "after the commit, before scrub()": ("_core/maintenance.py", "complete = self.store.scrub()"),
    "in scrub(), before the full-text merge": ("_stores/sqlite.py", "INSERT INTO memory_fts (memory_fts) VALUES ('optimize')"),
    "in scrub(), before VACUUM": ("_stores/sqlite.py", 'self.conn.execute("VACUUM")'),
}


def killed_before_line(home: Path, relpath: str, text: str, *args: str) -> bool:
    """Run `mnemo ARGS`, which dies just before the line holding ``text``; True if it did."""
    env = {"KILLS_FILE": relpath, "KILLS_LINE": str(line_of(relpath, text))}
    r = subprocess.run([sys.executable, "-c", BEFORE_LINE, *args], env=_env(home, env), cwd=home.parent, capture_output=True,
                       text=True, timeout=180, check=False)
    return r.returncode == 137


# ---------------------------------------------------------------- the starting homes


def _base_texts(n: int) -> list[str]:
    return [f"base memory {i}: the deploy window for service svc{i} is {i % 24}:00 on rack r{i % 7}" for i in range(n)]


def build(folder: Path, memories: int) -> dict[str, Any]:
    """The starting homes and inputs: ``{"plain", "reindex": home, "jsonl", "notes": path, "purge_ids": [...]}``."""
    from fake_embedder import FakeEmbedder

    from mnemo import Mnemo

    class OtherModel(FakeEmbedder):
        name = "fake-hash-256-old"

    plain = folder / "plain" / "home"
    plain.mkdir(parents=True, mode=0o700)
    with Mnemo(plain / "memory.db", embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": t} for t in _base_texts(memories)], dedup=False)
        purge_ids = [r[0].id for r in m.remember_many([{"content": f"{PURGE_MARKER} secret {i}: the vault code for locker L{i} is {7000 + i}"}
                                               for i in range(PURGED)], dedup=False)]
        m.remember(SERVE_FACT, type="decision")
    reindex = folder / "reindex" / "home"
    reindex.mkdir(parents=True, mode=0o700)
    with Mnemo(reindex / "memory.db", embedder=OtherModel()) as m:
        m.remember_many([{"content": t} for t in _base_texts(memories * 3)], dedup=False)
    jsonl = folder / "import.jsonl"
    with jsonl.open("w", encoding="utf-8") as f:
        for i in range(RECORDS):
            f.write(json.dumps({"content": f"imported record {i}: host h{i} listens on port {10000 + i} in zone z{i % 5}",
                                "tags": ["imp"]}) + "\n")
    notes = folder / "notes"
    notes.mkdir()
    for i in range(NOTES):
        paras = "\n\n".join(f"Note {i} paragraph {j}: the build of module mod{i}x{j} needs flag --fast{j} and cache c{i}." * 3 for j in range(4))
        (notes / f"note{i:02d}.md").write_text(f"# Note {i} notetok{i}q\n\n{paras}\n", encoding="utf-8")
    return {"plain": plain, "reindex": reindex, "jsonl": jsonl, "notes": notes, "purge_ids": purge_ids}


def fresh(template: Path, work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "run").mkdir(mode=0o700)
    home = work / "home"
    shutil.copytree(template, home)
    return home


# ---------------------------------------------------------------- what the user finds


def export(home: Path) -> list[dict[str, Any]] | None:
    r = check_cli(home, "export", "--format", "jsonl")
    if r.returncode != 0:
        return None
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def doctor_fails(home: Path) -> set[str]:
    r = check_cli(home, "doctor", "--json")
    try:
        checks = json.loads(r.stdout)["checks"]
    except (ValueError, KeyError):
        return {f"doctor exit {r.returncode}: {r.stderr.strip()[:200]}"}
    return {f"{c['check']}: {c['detail']}" for c in checks if c["status"] == "fail"}


def opens(home: Path) -> list[str]:
    r = check_cli(home, "stats", "--json")
    return [] if r.returncode == 0 else [f"open: `mnemo stats` failed ({r.returncode}): {r.stderr.strip()[:300]}"]


def health(home: Path, baseline: set[str]) -> list[str]:
    """The store opens and doctor fails no check that the starting store did not fail."""
    problems = opens(home)
    if problems:
        return problems
    fails = doctor_fails(home)
    names = {b.split(":")[0] for b in baseline}
    return [f"doctor: {f}" for f in sorted(fails) if f.split(":")[0] not in names]


def finds(home: Path, query: str, want: str, mode: str = "fts") -> bool:
    r = check_cli(home, "search", query, "--json", "--mode", mode, "-k", "10", "--no-touch", "--scope", "all")
    return r.returncode == 0 and want in r.stdout


def marker_files(home: Path, marker: str) -> list[str]:
    """Files of the home holding ``marker`` as written or as its full-text token (lower case)."""
    pats = {marker.encode(), marker.lower().encode()}
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and any(m in p.read_bytes() for m in pats))


# ---------------------------------------------------------------- one trial per command


class Trial:
    """One kill of one command: ``run(delay)`` returns (landed while running, problems by kind)."""

    def __init__(self, data: dict[str, Any], work: Path, baseline: dict[str, set[str]], rng: random.Random):
        self.data, self.work, self.baseline, self.rng = data, work, baseline, rng
        self.saves, self.hooks = SAVES, HOOKS  # processes in the save loop, hooks asked of the service

    # save ---------------------------------------------------------
    def save(self, delay: float | None, tag: str) -> tuple[bool, dict[str, list[str]]]:
        home = fresh(self.data["plain"], self.work)
        texts = [f"saved fact {tag}-{i}: the queue qq{tag}x{i} drains every {i + 2} minutes" for i in range(self.saves)]
        acked: list[str] = []
        killed_text: list[str] = []
        start = time.perf_counter()
        alive = False
        for text in texts:
            left = None if delay is None else delay - (time.perf_counter() - start)
            if left is not None and left <= 0:
                break
            if left is None:
                r = mnemo(home, "save", "--json", text)
                out, code = r.stdout, r.returncode
            else:
                alive, done = killed_after(argv("save", "--json", text), home, left)
                out, code = done.stdout, done.returncode
            if code == 0:
                acked.append(json.loads(out)["memory"]["id"])
            elif alive:
                killed_text.append(text)
                break
        p: dict[str, list[str]] = {}
        mems = export(home)
        ids = {m["id"] for m in mems or []}
        lost = [i for i in acked if i not in ids]
        if killed_text and acked:
            p["note: killed after 1+ acknowledged saves"] = []
        if lost:
            p["acknowledged save lost"] = [f"{len(lost)} of {len(acked)} acknowledged saves missing: {lost[:3]}"]
        p["health"] = health(home, self.baseline["plain"])
        for text in killed_text:  # the user saves it again
            r = check_cli(home, "save", "--json", text)
            if r.returncode != 0:
                p["rerun"] = [f"save again failed ({r.returncode}): {r.stderr.strip()[:300]}"]
            elif not finds(home, text.split(":")[0].split()[-1], text.split(":")[0]):
                p["rerun"] = [f"saved again but `mnemo search` does not find {text!r}"]
        if killed_text:
            p["health after rerun"] = health(home, self.baseline["plain"])
        return alive, p

    # import -------------------------------------------------------
    def import_(self, delay: float | None, tag: str) -> tuple[bool, dict[str, list[str]]]:
        from mnemo._core.maintenance import IMPORT_BATCH

        home = fresh(self.data["plain"], self.work)
        cmd = argv("import", "--json", str(self.data["jsonl"]))
        alive = killed_after(cmd, home, delay)[0] if delay is not None else False
        if delay is None:
            assert mnemo(home, "import", "--json", str(self.data["jsonl"])).returncode == 0
        p: dict[str, list[str]] = {}
        p["health"] = health(home, self.baseline["plain"])
        mems = export(home) or []
        got = [m for m in mems if m["content"].startswith("imported record ")]
        if 0 < len(got) < RECORDS:
            p["note: left part of the file imported"] = []
        if len(got) % IMPORT_BATCH and len(got) != RECORDS:
            p["half a batch"] = [f"{len(got)} of {RECORDS} records after the kill (batch {IMPORT_BATCH})"]
        for m in self.rng.sample(got, min(2, len(got))):
            n = m["content"].split(":")[0].split()[-1]
            if not finds(home, f"port {10000 + int(n)}", m["content"]):
                p.setdefault("imported but not found", []).append(m["content"])
        r = check_cli(home, "import", "--json", str(self.data["jsonl"]))
        if r.returncode != 0:
            p["rerun"] = [f"import again failed ({r.returncode}): {r.stderr.strip()[:300]}"]
        else:
            mems = export(home) or []
            got = Counter(m["content"] for m in mems if m["content"].startswith("imported record "))
            if len(got) != RECORDS or max(got.values()) != 1:
                p["rerun"] = [f"after the rerun {len(got)} distinct records of {RECORDS}, {sum(got.values())} in all"]
            p["health after rerun"] = health(home, self.baseline["plain"])
        return alive, p

    # ingest -------------------------------------------------------
    def ingest(self, delay: float | None, tag: str) -> tuple[bool, dict[str, list[str]]]:
        home = fresh(self.data["plain"], self.work)
        cmd = argv("ingest", "--json", str(self.data["notes"]))
        alive = killed_after(cmd, home, delay)[0] if delay is not None else False
        p: dict[str, list[str]] = {}
        p["health"] = health(home, self.baseline["plain"])
        chunks = [m for m in export(home) or [] if m["content"].lstrip("# ").startswith("Note ") or "notetok" in m["content"]]
        if 0 < len(chunks) < len(self.data["ingest_reference"]):
            p["note: left part of the notes ingested"] = []
        for m in self.rng.sample(chunks, min(2, len(chunks))):
            words = [w for w in m["content"].replace(":", " ").replace(".", " ").split() if w.startswith(("mod", "notetok"))]
            if words and not finds(home, words[0], words[0]):
                p.setdefault("ingested but not found", []).append(f"{words[0]} in {m['id']}")
        r = check_cli(home, "ingest", "--json", str(self.data["notes"]))
        if r.returncode != 0:
            p["rerun"] = [f"ingest again failed ({r.returncode}): {r.stderr.strip()[:300]}"]
        else:
            active = sorted(m["content"] for m in export(home) or [] if m.get("status") == "active" and
                            ("notetok" in m["content"] or m["content"].startswith("Note ")))
            if active != self.data["ingest_reference"]:
                want = Counter(self.data["ingest_reference"])
                have = Counter(active)
                p["rerun"] = [(f"active chunks after the rerun: {len(active)} (unkilled run: {len(want)}); "
                               f"missing {sum((want - have).values())}, extra {sum((have - want).values())}")]
            p["health after rerun"] = health(home, self.baseline["plain"])
        return alive, p

    # reindex ------------------------------------------------------
    def reindex(self, delay: float | None, tag: str) -> tuple[bool, dict[str, list[str]]]:
        home = fresh(self.data["reindex"], self.work)
        alive = killed_after(argv("reindex", "--json"), home, delay)[0] if delay is not None else False
        p: dict[str, list[str]] = {}
        p["health"] = health(home, self.baseline["reindex"])
        if not finds(home, "svc17", "service svc17 is"):
            p["search after the kill"] = ["`mnemo search svc17` does not find its memory"]
        r = check_cli(home, "reindex", "--json")
        if r.returncode != 0:
            p["rerun"] = [f"reindex again failed ({r.returncode}): {r.stderr.strip()[:300]}"]
        else:
            p["health after rerun"] = health(home, set())
            if not finds(home, "svc42", "service svc42 is", mode="vector") or not finds(home, "svc43", "service svc43 is"):
                p["rerun"] = ["after the rerun `mnemo search` does not find a sample"]
        return alive, p

    # purge --------------------------------------------------------
    def purge(self, delay: float | None, tag: str, point: str | None = None) -> tuple[bool, dict[str, list[str]]]:
        home = fresh(self.data["plain"], self.work)
        ids = self.data["purge_ids"]
        cmd = ("purge", "--yes", "--json", *ids)
        if point is not None:
            alive = killed_before_line(home, *PURGE_POINTS[point], *cmd)
        else:
            alive = killed_after(argv(*cmd), home, delay)[0] if delay is not None else False
        p: dict[str, list[str]] = {}
        on_disk = marker_files(home, PURGE_MARKER) if alive else []
        p["health"] = health(home, self.baseline["plain"])
        present = {m["id"] for m in export(home) or []}
        left = [i for i in ids if i in present]
        if left and len(left) != len(ids):
            p["half a purge"] = [f"{len(left)} of {len(ids)} ids still there after the kill"]
        if on_disk and not left:
            p["note: purged text on disk until the next open"] = on_disk
        r = check_cli(home, "purge", "--yes", "--json", *ids)
        if r.returncode != 0:
            if not left and "no memory with id" in r.stderr:
                p["rerun"] = []  # all gone already: the same command says so; the user's next step is doctor
                p["note: rerun says already purged"] = []
            else:
                p["rerun"] = [f"purge again failed ({r.returncode}): {r.stderr.strip()[:300]}"]
        present = {m["id"] for m in export(home) or []}
        still = [i for i in ids if i in present]
        if still:
            p["purged id still there"] = [f"{len(still)} ids after the rerun"]
        traces = marker_files(home, PURGE_MARKER)
        if traces:
            d = check_cli(home, "doctor", "--json")  # what the purge's own warning tells the user to run
            after_doctor = marker_files(home, PURGE_MARKER)
            p["purged text left in files"] = [(f"{traces} after the rerun (exit {r.returncode}); after `mnemo doctor`: {after_doctor or 'none'}"
                                               f"{'' if d.returncode == 0 else f' (doctor exit {d.returncode})'}")]
        p["health after rerun"] = health(home, self.baseline["plain"])
        return alive, p

    # serve --------------------------------------------------------
    def serve(self, delay: float | None, tag: str) -> tuple[bool, dict[str, list[str]]]:
        from mnemo._hooks.client import lock_path, request, service_running, socket_path

        home = fresh(self.data["plain"], self.work)
        db = str(home / "memory.db")
        env = _env(home)
        old_runtime = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
        p: dict[str, list[str]] = {}
        procs: list[subprocess.Popen[str]] = []
        try:
            def start_service() -> subprocess.Popen[str] | None:
                proc = subprocess.Popen(argv("serve", "--idle", "60", "--json"), env=env, cwd=home.parent,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                procs.append(proc)
                end = time.monotonic() + 30
                while time.monotonic() < end and proc.poll() is None:
                    if request(db, {"op": "ping"}) is not None:
                        return proc
                    time.sleep(0.05)
                return None

            first = start_service()
            if first is None:
                return False, {"service did not start": [procs[-1].communicate(timeout=30)[1].strip()[:300]]}
            replies: list[tuple[int, str, str]] = []

            def hooks() -> None:
                for i in range(self.hooks):
                    r = mnemo(home, "hook", "user-prompt", stdin=hook_payload(home, f"s-{tag}-{i}"), timeout=60)
                    replies.append((r.returncode, r.stdout, r.stderr))

            t0 = time.perf_counter()
            loop = threading.Thread(target=hooks)
            loop.start()
            alive = False
            if delay is not None:
                time.sleep(delay)
                alive = first.poll() is None
                if alive:
                    os.kill(first.pid, signal.SIGKILL)
            loop.join()
            self.data.setdefault("hook_loop_s", []).append(time.perf_counter() - t0)
            bad = [f"exit {c}: {e.strip()[:200]}" for c, o, e in replies if c != 0 or "PostgreSQL 16" not in o]
            if bad:
                p["hook not answered"] = bad[:3] + ([f"… {len(bad)} in all"] if len(bad) > 3 else [])
            if delay is None:
                request(db, {"op": "stop"})
                first.communicate(timeout=30)
                return False, p
            first.communicate(timeout=30)
            r = mnemo(home, "hook", "user-prompt", stdin=hook_payload(home, f"s-{tag}-after"), timeout=60)
            if r.returncode != 0 or "PostgreSQL 16" not in r.stdout:
                p["next hook"] = [f"exit {r.returncode}: {r.stderr.strip()[:300]}"]
            if service_running(db):
                p["stale lock"] = [f"{lock_path(db)} is held after the service was killed"]
            second = start_service()
            if second is None:
                _, err = procs[-1].communicate(timeout=30) if procs[-1].poll() is not None else ("", "no ping within 30 s")
                p["new service"] = [f"did not start: {err.strip()[:300]} (socket there: {os.path.exists(socket_path(db))})"]
            else:
                r = mnemo(home, "hook", "user-prompt", stdin=hook_payload(home, f"s-{tag}-new"), timeout=60)
                served = (request(db, {"op": "ping"}) or {}).get("served", 0)
                if r.returncode != 0 or "PostgreSQL 16" not in r.stdout or served < 2:
                    p["new service"] = [f"hook via the new service: exit {r.returncode}, served {served}: {r.stderr.strip()[:200]}"]
                s = check_cli(home, "serve", "--stop", "--json")
                try:
                    second.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    p["new service"] = [f"did not stop: {s.stdout.strip()[:200]} {s.stderr.strip()[:200]}"]
                if os.path.exists(socket_path(db)):
                    p.setdefault("new service", []).append("its socket is left after it stopped")
            p["health"] = health(home, self.baseline["plain"])
            return alive, p
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
            if old_runtime is None:
                os.environ.pop("XDG_RUNTIME_DIR", None)
            else:
                os.environ["XDG_RUNTIME_DIR"] = old_runtime

    def run(self, command: str, delay: float | None, tag: str, point: str | None = None) -> tuple[bool, dict[str, list[str]]]:
        """One trial: SIGKILL after ``delay`` seconds, or (purge) ``os._exit`` at the PURGE_POINTS entry ``point``."""
        if point is not None:
            alive, p = self.purge(None, tag, point)
        else:
            fn: Callable[[float | None, str], tuple[bool, dict[str, list[str]]]] = getattr(self, "import_" if command == "import" else command)
            alive, p = fn(delay, tag)
        return alive, {k: v for k, v in p.items() if v or k.startswith("note:")}


def hook_payload(home: Path, session: str) -> str:
    data = json.loads((ROOT / "tests" / "data" / "hooks" / "user_prompt.json").read_text("utf-8"))
    data.update(cwd=str(home.parent), session_id=session, transcript_path=str(home.parent / "none.jsonl"))
    return json.dumps(data)


# ---------------------------------------------------------------- driving it


def prepare(root: Path, memories: int) -> tuple[dict[str, Any], dict[str, set[str]]]:
    """Build the starting homes; the doctor baseline of each; the active chunks an unkilled ingest leaves."""
    data = build(root / "templates", memories)
    baseline = {"plain": doctor_fails(data["plain"]), "reindex": doctor_fails(data["reindex"])}
    home = fresh(data["plain"], root / "ref")
    r = mnemo(home, "ingest", "--json", str(data["notes"]))
    assert r.returncode == 0, r.stderr
    exported = export(home)
    # an export that failed would make the reference empty and every rerun "extra": say so instead
    assert exported is not None, check_cli(home, "export", "--format", "jsonl").stderr
    data["ingest_reference"] = sorted(m["content"] for m in exported if m.get("status") == "active" and
                                      ("notetok" in m["content"] or m["content"].startswith("Note ")))
    assert data["ingest_reference"], "the unkilled ingest left no chunks"
    return data, baseline


def measure(trial: Trial, command: str, runs: int = 2) -> tuple[float, float]:
    """(median unkilled run time, start-up + open time) of the command as the harness runs it."""
    times, opens_ = [], []
    for _ in range(runs):
        home = fresh(trial.data["plain"], trial.work)
        t0 = time.perf_counter()
        assert mnemo(home, "stats", "--json").returncode == 0
        opens_.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        if command == "serve":
            trial.data["hook_loop_s"] = []
            trial.run(command, None, "m")
            times.append(trial.data["hook_loop_s"][-1])
            continue
        if command == "save":
            for i in range(trial.saves):
                assert mnemo(home, "save", "--json", f"measure {i} fact zz{i}").returncode == 0
        elif command == "import":
            assert mnemo(home, "import", "--json", str(trial.data["jsonl"])).returncode == 0
        elif command == "ingest":
            assert mnemo(home, "ingest", "--json", str(trial.data["notes"])).returncode == 0
        elif command == "reindex":
            home = fresh(trial.data["reindex"], trial.work)
            t0 = time.perf_counter()
            assert mnemo(home, "reindex", "--json").returncode == 0
        elif command == "purge":
            r = mnemo(home, "purge", "--yes", "--json", *trial.data["purge_ids"])
            assert r.returncode == 0, r.stderr
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], sorted(opens_)[len(opens_) // 2]


def delays(rng: random.Random, n: int, run_s: float, open_s: float) -> list[float]:
    out = []
    for i in range(n):
        lo, hi = (0.0, run_s * 1.05) if i % 3 == 0 else (min(open_s * 0.8, run_s * 0.5), run_s * 1.05)
        out.append(rng.uniform(lo, hi))
    return out


def main(argv_: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=300)
    ap.add_argument("--kills", type=int, default=30, help="random-time kills per command")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", type=int, default=None, help="replay one trial number (with the same seed and --kills)")
    args = ap.parse_args(argv_)
    root = Path(tempfile.mkdtemp(prefix="mnemo-kills-"))
    failures = 0
    try:
        data, baseline = prepare(root, args.memories)
        print(f"store: {args.memories} memories (+{PURGED} to purge); import {RECORDS} records; ingest {NOTES} notes; seed {args.seed}")
        if any(baseline.values()):
            print(f"doctor on the starting stores (not counted): {baseline}")
        print("| command | run (open) | kills | killed while running | failures | failures by kind |")
        print("|---|---|---|---|---|---|")
        for command in args.commands.split(","):
            rng = random.Random(f"{args.seed}-{command}")
            trial = Trial(data, root / "work", baseline, random.Random(f"{args.seed}-{command}-sample"))
            run_s, open_s = measure(trial, command)
            kills = alive = failed = 0
            kinds: Counter[str] = Counter()
            for n, delay in enumerate(delays(rng, args.kills, run_s, open_s)):
                if args.only is not None and n != args.only:
                    continue
                landed, problems = trial.run(command, delay, f"{args.seed}t{n}")
                kills += 1
                alive += int(landed)
                real = {k: v for k, v in problems.items() if not k.startswith("note:")}
                for k in problems:
                    kinds[k] += 1
                if real:
                    failed += 1
                    failures += 1
                    for k, v in real.items():
                        print(f"  FAIL {command} trial {n} (delay {delay:.3f}s, killed while running: {landed}; "
                              f"replay: --commands {command} --seed {args.seed} --kills {args.kills} --only {n}): {k}: {'; '.join(v)}",
                              file=sys.stderr, flush=True)
            by_kind = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "—"
            print(f"| {command} | {run_s:.2f}s ({open_s:.2f}s) | {kills} | {alive} | {failed} | {by_kind} |", flush=True)
            if command == "purge" and args.only is None:  # the window a random kill rarely hits: committed, not yet scrubbed
                for point in PURGE_POINTS:
                    landed, problems = trial.run(command, None, f"{args.seed}p", point)
                    real = {k: v for k, v in problems.items() if not k.startswith("note:")}
                    failures += bool(real) or not landed
                    notes = "; ".join(f"{k[6:]}: {v}" for k, v in problems.items() if k.startswith("note:"))
                    print(f"| purge, os._exit {point} | — | 1 | {int(landed)} | {int(bool(real))} | "
                          f"{', '.join(real) or '—'}{' (' + notes + ')' if notes else ''} |", flush=True)
                    for k, v in real.items():
                        print(f"  FAIL purge killed {point}: {k}: {'; '.join(v)}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
