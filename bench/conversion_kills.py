"""kill -9 at any instant of `mnemo encrypt`, `decrypt` and `rekey`: nothing lost, no plaintext left.

    python bench/conversion_kills.py                      # 40 random kills + a 40-point line sweep per command
    python bench/conversion_kills.py --kills 30 --sweep 0 --memories 300 --seed 7

Each trial starts from a fresh copy of one mnemo home: a store of N memories, each holding MARKER,
with two migration backups (one made by a real v1 → latest migration, one a full copy), and for
decrypt and rekey the key file that encrypts all three. The command runs as a real subprocess
(`python -m mnemo …`) and is killed:

* at a random instant (SIGKILL from outside): a third of the delays are drawn over the whole
  measured run, two thirds over its conversion window (after the imports and the store's open,
  as measured by `mnemo stats` on the same home, up to the end of the run);
* in the sweep, by ``os._exit(137)`` just before its Kth line of conversion code (``sqlite.py``,
  ``sqlite_convert.py``, ``sqlite_rekey.py``, ``keys.py`` and the CLI commands, module bodies excluded), K spread over every line the command
  runs; a kill inside a long C call (the copy, the re-key) is what the random kills add.

After each kill the user does what they would, with the key they have (the key file, no
MNEMO_KEY): `mnemo stats --json` (the normal open path, which finishes or undoes what the kill
left) must count every memory; `mnemo export` must return every memory's text; every file in the
home is byte-scanned for MARKER (allowed only in the store, its WAL and its backups while the store
itself is plaintext); ``conversion_leftovers`` and ``pending_problem`` (what doctor reports) must say
nothing. Then the same command is run again and must succeed (or say the store already is what
was asked), and the checks are repeated. Prints the counts per command; exit status 1 on any failure.
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

MARKER = "KILLTEST-MARKER-5c1e"
MODEL = "plugin:fake_embedder:FakeEmbedder"
COMMANDS = ("encrypt", "decrypt", "rekey")

#: runs `mnemo ARGS` and kills itself before the Kth line of conversion code (K=0: counts them)
RUNNER = r"""
import os, sys
K = int(os.environ["KILLS_AT_LINE"])
WATCH = tuple(os.environ["KILLS_WATCH"].split(os.pathsep))
MARK_FILE, MARK_LINE = os.environ["KILLS_MARK"].rsplit(":", 1)
seen, mark = 0, 0
def local(frame, event, arg):
    global seen, mark
    if event == "line":
        seen += 1
        if seen == K:
            os._exit(137)
        if not mark and frame.f_lineno == int(MARK_LINE) and frame.f_code.co_filename.endswith(MARK_FILE):
            mark = seen
    return local
def tracer(frame, event, arg):
    if frame.f_code.co_filename.endswith(WATCH) and frame.f_code.co_name != "<module>":
        return local
    return None
if K == 0:
    import atexit
    atexit.register(lambda: open(os.environ["KILLS_COUNT_FILE"], "w").write(f"{seen} {mark}"))
sys.settrace(tracer)
sys.argv = ["mnemo", *sys.argv[1:]]
from mnemo.__main__ import launch
launch()
"""
WATCH = os.pathsep.join(["_stores/sqlite.py", "_stores/sqlite_convert.py", "_stores/sqlite_rekey.py", "_settings/keys.py", "_cli/commands.py"])


def _commit_line() -> str:
    """``sqlite_rekey.py:LINE`` of the store's swap in ``convert`` (the sweep counts lines up to it)."""
    path = ROOT / "src" / "mnemo" / "_stores" / "sqlite_rekey.py"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if "# the commit point" in line and "os.replace" in line:
            return f"_stores/sqlite_rekey.py:{n}"
    raise RuntimeError("no commit point in convert")


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(home), MNEMO_MODEL=MODEL,
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.update(extra or {})
    return env


def mnemo(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`mnemo ARGS` as a subprocess."""
    return subprocess.run([sys.executable, "-m", "mnemo", *args], env=_env(home), capture_output=True, text=True, timeout=timeout, check=False)


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mnemo ARGS` in this process (the same code path as the command line, without the start-up)."""
    return run_in_process(_env(home), args)


def run_in_process(env: dict[str, str], args: tuple[str, ...] | list[str], *, cwd: Path | None = None,
                   stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`mnemo ARGS` in this process with ``env`` as the whole environment (and ``cwd`` as the
    working folder, ``stdin`` as standard input), all restored afterwards; the exit code and
    output as a subprocess gives them."""
    import contextlib
    import io

    from mnemo._entry import main as entry

    saved, here, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            entry(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
        sys.stdin = saved_stdin
    return subprocess.CompletedProcess(["mnemo", *args], code, out.getvalue(), err.getvalue())


# ---------------------------------------------------------------- the store


def build(folder: Path, memories: int) -> dict[str, Path]:
    """Plain and encrypted mnemo homes to copy per trial; returns ``{"plain": home, "encrypted": home}``."""
    from fake_embedder import FakeEmbedder
    from old_stores import v1_store

    from mnemo import Mnemo
    from mnemo._settings import keys
    from mnemo._stores.sqlite_rekey import convert

    plain = folder / "plain"
    plain.mkdir(parents=True, mode=0o700)
    db = plain / "memory.db"
    v1_store(db, f"{MARKER} from schema v1")  # the first open migrates it, with a backup
    with Mnemo(db, embedder=FakeEmbedder()) as m:
        m.remember_many([{"content": f"{MARKER} memory {i}: the deploy window for service {i} is {i % 24}:00"}
                         for i in range(memories - 1)], dedup=False)
        m.store._backup("v9")  # a full copy, as a migration makes
    encrypted = folder / "encrypted"
    shutil.copytree(plain, encrypted)
    key = keys.create_key_file(encrypted / "key")
    convert(encrypted / "memory.db", old_key=None, new_key=key.value)
    return {"plain": plain, "encrypted": encrypted}


def expected_texts(home: Path) -> set[str]:
    r = mnemo(home, "export", "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return {json.loads(line)["content"] for line in r.stdout.splitlines() if line.strip()}


# ---------------------------------------------------------------- the checks


def check(home: Path, texts: set[str]) -> list[str]:
    """What is wrong with the home after a kill, as the user finds it; empty when all is well."""
    from mnemo._settings import keys
    from mnemo._stores.sqlite_convert import conversion_leftovers, opens_with
    from mnemo._stores.sqlite_file import is_encrypted

    problems: list[str] = []
    db = home / "memory.db"
    r = cli(home, "stats", "--json")
    if r.returncode != 0:
        return [f"stats failed ({r.returncode}): {r.stderr.strip()[:300]}"]
    total = json.loads(r.stdout)["total"]
    if total != len(texts):
        problems.append(f"stats counts {total} memories, expected {len(texts)}")
    r = cli(home, "export", "--format", "jsonl")
    got = {json.loads(line)["content"] for line in r.stdout.splitlines() if line.strip()} if r.returncode == 0 else set()
    if got != texts:
        problems.append(f"export returns {len(got)} memories ({len(texts - got)} missing)")
    plaintext_store = not is_encrypted(db)
    allowed = {db.name, db.name + "-wal"}
    for f in sorted(p for p in home.rglob("*") if p.is_file()):
        if MARKER.encode() not in f.read_bytes():
            continue
        if plaintext_store and (f.name in allowed or f.name.startswith(db.name + ".backup-")):
            continue
        problems.append(f"plaintext memory text in {f.name}" + (" (the store is encrypted)" if not plaintext_store else ""))
    key = None if plaintext_store else keys.resolve(str(db), home / "key")
    if not plaintext_store and (key is None or not opens_with(db, key.value)):
        problems.append("the key file does not open the store")
    problems += [f"doctor would say: {p}" for p in conversion_leftovers(db, None if key is None else key.value)]
    pending = keys.pending_problem(str(db), home / "key")
    if pending:
        problems.append(f"doctor would say: {pending}")
    return problems


def state_of(home: Path) -> str:
    from mnemo._stores.sqlite_file import is_encrypted

    return "encrypted" if is_encrypted(home / "memory.db") else "plaintext"


def side_of_swap(home: Path, command: str, templates: dict[str, Path]) -> str:
    """"before" when the store is still as the command found it (plaintext for encrypt, encrypted
    for decrypt, opened by the old key for rekey), else "after"."""
    from mnemo._stores.sqlite_convert import opens_with

    if command == "rekey":
        old = (templates["encrypted"] / "key").read_text().strip()
        return "before" if opens_with(home / "memory.db", old) else "after"
    return "before" if state_of(home) == ("plaintext" if command == "encrypt" else "encrypted") else "after"


def rerun(home: Path, command: str) -> list[str]:
    """Run the interrupted command again to completion, as the user would."""
    r = cli(home, command)
    done = {"encrypt": "already encrypted", "decrypt": "not an encrypted store"}
    if r.returncode == 0 or (r.returncode == 2 and done.get(command, "\0") in r.stderr):
        want = "plaintext" if command == "decrypt" else "encrypted"
        return [] if state_of(home) == want else [f"after `mnemo {command}` the store is {state_of(home)}"]
    return [f"re-running `mnemo {command}` failed ({r.returncode}): {r.stderr.strip()[:300]}"]


# ---------------------------------------------------------------- the kills


def start(command: str) -> str:
    return "plain" if command == "encrypt" else "encrypted"


def count_lines(home: Path, command: str) -> tuple[int, int]:
    """Run `mnemo COMMAND` to the end: (lines of conversion code it runs, the line of its commit point)."""
    count_file = home.parent / f"count-{os.getpid()}"
    env = _env(home, {"KILLS_AT_LINE": "0", "KILLS_WATCH": WATCH, "KILLS_COUNT_FILE": str(count_file), "KILLS_MARK": _commit_line()})
    r = subprocess.run([sys.executable, "-c", RUNNER, command], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    total, commit = map(int, count_file.read_text().split())
    count_file.unlink()
    return total, commit


def sweep_points(total: int, commit: int, n: int) -> list[int]:
    """``n`` lines to die before: half spread before the commit point, half from it to the end."""
    before = [max(1, round(commit * (j + 0.5) / (n - n // 2))) for j in range(n - n // 2)]
    after = [commit + round((total - commit) * j / max(1, n // 2)) for j in range(n // 2)]
    return sorted(set(before + after))


def run_killed_at_line(home: Path, command: str, line: int) -> bool:
    """Run `mnemo COMMAND`, which kills itself before its LINEth line of conversion code; True if it did."""
    env = _env(home, {"KILLS_AT_LINE": str(line), "KILLS_WATCH": WATCH, "KILLS_COUNT_FILE": "", "KILLS_MARK": _commit_line()})
    r = subprocess.run([sys.executable, "-c", RUNNER, command], env=env, capture_output=True, text=True, timeout=120, check=False)
    return r.returncode == 137


def run_killed_after(home: Path, command: str, delay: float) -> bool:
    """Start `mnemo COMMAND` and SIGKILL it after ``delay`` seconds; True when it was still running."""
    proc = subprocess.Popen([sys.executable, "-m", "mnemo", command], env=_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    alive = proc.poll() is None
    if alive:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return alive


def trial(templates: dict[str, Path], work: Path, command: str, texts: set[str], kill: Any) -> tuple[str, list[str]]:
    """Copy the starting home, run the kill, check, re-run, check. Returns (which side of the
    store's swap the kill left it: "before" or "after", problems)."""
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(templates[start(command)], home)
    kill(home)
    state = side_of_swap(home, command, templates)
    problems = check(home, texts)
    if not problems:
        problems = rerun(home, command) or check(home, texts)
    return state, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=400)
    ap.add_argument("--kills", type=int, default=40, help="random-time kills per command")
    ap.add_argument("--sweep", type=int, default=40, help="line-sweep kills per command (0: none)")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="mnemo-kills-"))
    failures = 0
    try:
        templates = build(root / "templates", args.memories)
        texts = expected_texts(templates["plain"])
        assert len(texts) == args.memories and expected_texts(templates["encrypted"]) == texts
        work = root / "work"
        work.mkdir()
        print(f"store: {args.memories} memories, 2 migration backups; seed {args.seed}")
        print("| command | kind | kills | killed while running | store left before / after its swap | failures |")
        print("|---|---|---|---|---|---|")
        for command in args.commands.split(","):
            # how long a run takes, and when its conversion starts (a stats run: imports + open)
            home = work / "home"
            runs, opens = [], []
            for _ in range(3):
                shutil.rmtree(home, ignore_errors=True)
                shutil.copytree(templates[start(command)], home)
                t0 = time.perf_counter()
                assert mnemo(home, "stats", "--json").returncode == 0
                opens.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                r = mnemo(home, command)
                assert r.returncode == 0, r.stderr
                runs.append(time.perf_counter() - t0)
            run_s, open_s = sorted(runs)[1], sorted(opens)[1]
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(templates[start(command)], home)
            lines, commit = count_lines(home, command)
            plans: list[tuple[str, Any]] = []
            for i in range(args.kills):
                lo, hi = (0.0, run_s * 1.05) if i % 3 == 0 else (open_s * 0.8, run_s * 1.05)
                delay = rng.uniform(lo, hi)
                plans.append(("random", lambda h, out, d=delay, c=command: out.append(run_killed_after(h, c, d))))
            if args.sweep:
                for k in sweep_points(lines, commit, args.sweep):
                    plans.append(("sweep", lambda h, out, k=k, c=command: out.append(run_killed_at_line(h, c, k))))
            stats: dict[str, dict[str, Any]] = {}
            for kind, kill in plans:
                outcome: list[bool] = []
                state, problems = trial(templates, work, command, texts, lambda h, kill=kill, out=outcome: kill(h, out))
                row = stats.setdefault(kind, {"kills": 0, "alive": 0, "before": 0, "after": 0, "failures": 0})
                row["kills"] += 1
                row["alive"] += int(outcome[0]) if outcome else 0
                row[state] += 1
                if problems:
                    row["failures"] += 1
                    failures += 1
                    print(f"  FAIL {command} ({kind}): {'; '.join(problems)}", file=sys.stderr)
            for kind, row in stats.items():
                what = f"random (run {run_s:.2f}s, open {open_s:.2f}s)" if kind == "random" else f"line sweep ({lines} lines, swap at {commit})"
                print(f"| {command} | {what} | {row['kills']} | {row['alive']} | {row['before']} / {row['after']} | {row['failures']} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
