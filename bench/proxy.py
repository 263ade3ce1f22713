"""The memory proxy's speed: what ``mnemo proxy`` adds to the first streamed byte, and twenty
streams at once.

    python bench/proxy.py [--size 10000] [--queries 60] [--rounds 3] [--streams 20] [--no-write]

On a copy of the speed benchmark's cached 10k-memory store with the real e5 model, a fake
OpenAI-compatible upstream (``tests/fake_upstream.py``, in this process) answers every chat with a
Server-Sent Events stream, and a real ``mnemo proxy --upstream <fake> --no-capture`` (its own
process, as a person starts it; capture off so that background capture does not compete with
the timed calls) sits in front of it. The fake answers with TCP_NODELAY, as real servers do
(otherwise its first event now and then waits ~40 ms on the client's delayed ACK) and a listen
backlog of 128 (the standard library's 5 resets some of 20 connections at once). The proxy
picks its embedding threads as its model loads (the idle cores; ``--embed-threads`` sets them):

* **time to first byte**: ``POST /v1/chat/completions`` with ``stream: true`` and one user
  message, a LoCoMo or Chinese question, each a new one (so every proxied call embeds its query
  with the warm model, recalls and injects a block), timed from sending the request to the first
  body byte (then the rest is read). Per question three calls, in rotating order so load noise
  hits all: straight to the upstream, through the proxy, and through the proxy with recall
  switched off (``X-Mnemo-Recall: off``, the forwarding alone); each over its own kept-alive
  connection. Added latency = proxied − direct, per question;
* **where the time goes**: ``Mnemo.context`` in this process with the warm model on the same
  store for the same questions (after the proxy stopped), i.e. the recall part alone;
* **concurrency**: ``--streams`` threads each stream a distinct reply through the proxy at once
  (a question for recall, then ``say: <reply>``: the fake echoes the text after ``say:``, 10 ms
  between events, so the streams interleave); every thread's joined deltas must equal its own
  reply exactly (no mixing). Once per round, and once more with recall off.

Targets (issue text): added latency to the first streamed byte p50 ≤ 30 ms and p95 ≤ 80 ms with
a warm model at 10k memories; 20 concurrent streams with no mixing of replies. Results go to the
"Memory proxy" section of bench/README.md (medians over rounds of the per-round p50/p95).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import mnemo  # noqa: E402,F401  before numpy, as every entry point
from bench import _corpus  # noqa: E402
from bench._readme import write_section  # noqa: E402

START, END = "<!-- proxy:start -->", "<!-- proxy:end -->"
MARK = "[Background from earlier sessions"


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _conn(url: str) -> http.client.HTTPConnection:
    u = urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def _chat(text: str) -> bytes:
    return json.dumps({"model": "echo", "stream": True, "messages": [{"role": "user", "content": text}]}, ensure_ascii=False).encode()


def _ttfb(conn: http.client.HTTPConnection, body: bytes, extra: dict[str, str] | None = None) -> tuple[float, bytes]:
    """(seconds from sending to the first body byte, the whole body) of one streamed chat call."""
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench", **(extra or {})}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
    resp = conn.getresponse()
    first = resp.read1(1)
    dt = time.perf_counter() - t0
    rest = resp.read()
    if resp.status != 200 or not first:
        raise SystemExit(f"chat call: HTTP {resp.status} {(first + rest)[:200]!r}")
    return dt, first + rest


def _deltas(body: bytes) -> str:
    """The joined ``delta.content`` of an SSE body."""
    out = []
    for line in body.decode("utf-8").splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices") or []:
            out.append((choice.get("delta") or {}).get("content") or "")
    return "".join(out)


def _injected(chat: dict) -> bool:
    msgs = (chat.get("json") or {}).get("messages") or []
    return any(m.get("role") == "system" and MARK in str(m.get("content")) for m in msgs)


def concurrent_streams(proxy_url: str, questions: list[str], extra: dict[str, str] | None = None) -> tuple[int, float, list[str], float]:
    """(streams whose reply is exactly their own, wall seconds, problems, the slowest first byte
    in seconds) of one stream per question at once; each message is the question (what recall
    sees) and ``say: <a reply of its own>`` (what the fake upstream streams back)."""
    n = len(questions)
    texts = [f"stream-{i:02d} {uuid.uuid4().hex} " + " ".join(f"w{i}.{j}" for j in range(20)) for i in range(n)]
    got: list[str | None] = [None] * n
    firsts: list[float] = []
    problems: list[str] = []
    barrier = threading.Barrier(n + 1)

    def one(i: int) -> None:
        conn = _conn(proxy_url)
        try:
            conn.connect()
            barrier.wait()
            t0 = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body=_chat(f"{questions[i]} say: {texts[i]}"),
                         headers={"Content-Type": "application/json", "Authorization": "Bearer sk-bench", **(extra or {})})
            resp = conn.getresponse()
            body = resp.read1(1)
            firsts.append(time.perf_counter() - t0)
            body += resp.read()
            if resp.status != 200:
                problems.append(f"stream {i}: HTTP {resp.status} {body[:120]!r}")
            got[i] = _deltas(body)
        except Exception as exc:  # reported, counted as a wrong stream
            problems.append(f"stream {i}: {type(exc).__name__}: {exc}")
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ok = sum(g == t for g, t in zip(got, texts))
    problems += [f"stream {i}: got {str(g)[:80]!r}" for i, (g, t) in enumerate(zip(got, texts)) if g != t and g is not None]
    return ok, wall, problems, max(firsts, default=float("nan"))


def start_proxy(upstream: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str, list[str]]:
    """``mnemo proxy`` on a free port: its process, its ``…/v1`` URL, and what it writes to stderr
    afterwards (drained by a thread so that a chatty proxy never blocks on a full pipe)."""
    from webserver import spawn_until

    proc, found = spawn_until([sys.executable, "-m", "mnemo", "proxy", "--upstream", upstream, "--port", "0", "--no-capture"],
                              r"mnemo proxy at (http://\S+/v1)", env=env, timeout=300)
    lines: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))

    threading.Thread(target=drain, daemon=True).start()
    return proc, found.group(1), lines


def stop_proxy(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def recall_in_process(db: Path, rounds: list[list[str]], threads: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]], int]:
    """Per-round (p50, p95) seconds of ``Mnemo.context(record=False)`` with the warm e5 model (the
    proxy's call before it forwards), the same of ``record_context`` (what it does meanwhile), and
    the embedding threads it used."""
    from mnemo import Mnemo

    m = Mnemo(db, model="e5", scope=_corpus.QUERY_SCOPE, create=False, threads=threads or None)
    try:
        for q in _corpus.queries()[:5]:
            m.context(q, budget_tokens=400, top_k=5, surface="proxy")
        out, rec = [], []
        for qs in rounds:
            t, w = [], []
            for q in qs:
                t0 = time.perf_counter()
                found = m.context(q, budget_tokens=400, top_k=5, surface="proxy", record=False)
                t1 = time.perf_counter()
                m.record_context(found, surface="proxy")
                t.append(t1 - t0)
                w.append(time.perf_counter() - t1)
            out.append((_pct(t, 0.5), _pct(t, 0.95)))
            rec.append((_pct(w, 0.5), _pct(w, 0.95)))
        return out, rec, int(getattr(m.embedder, "_threads", 0))
    finally:
        m.close()


def main() -> None:
    import socketserver

    from fake_upstream import fake_upstream

    # the fake upstream answers with TCP_NODELAY, as real servers (uvicorn, nginx) do: without it
    # its first event waits on the client's delayed ACK of the headers (~40 ms) now and then
    socketserver.StreamRequestHandler.disable_nagle_algorithm = True
    # and with a real listen backlog: the standard library's 5 resets some of 20 connections at once
    socketserver.TCPServer.request_queue_size = 128

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=60, help="questions per round (each timed direct, proxied, proxied without recall)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--streams", type=int, default=20, help="concurrent streams per round")
    ap.add_argument("--embed-threads", type=int, default=0,
                    help="MNEMO_EMBED_THREADS for the proxy and the in-process recall (0: the product's default, the idle cores)")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/README.md")
    ap.add_argument("--note", default="", help="a sentence on the run's conditions, added to bench/README.md")
    args = ap.parse_args()
    from mnemo._recall.embed import idle_cores

    # the product's choice, made once here while the machine is quiet, for both the proxy and the
    # in-process recall (the proxy would make it as its model loads, under this script's load)
    args.embed_threads = args.embed_threads or idle_cores()

    src = _corpus.build_store(args.size, log=lambda s: print(s, file=sys.stderr))
    tmp = Path(tempfile.mkdtemp(prefix="mnemo-proxy-"))
    work = tmp / "memory.db"
    shutil.copyfile(src, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(tmp / "home"), MNEMO_DB=str(work), MNEMO_MODEL="e5", MNEMO_SCOPE=_corpus.QUERY_SCOPE)
    env["MNEMO_EMBED_THREADS"] = str(args.embed_threads)
    os.environ.update(env)
    prompts = _corpus.queries()
    round_qs = [prompts[5 + r * args.queries: 5 + (r + 1) * args.queries] for r in range(args.rounds)]
    if any(len(qs) < args.queries for qs in round_qs):
        raise SystemExit(f"only {len(prompts)} questions: fewer rounds or queries")
    load_before = os.getloadavg()[0]
    proc = None
    stderr: list[str] = []
    rounds, streams, streams_off, warm, stream_mem = [], [], [], [], []
    injected = proxied = 0
    try:
        with fake_upstream() as up:
            t0 = time.perf_counter()
            proc, proxy_url, stderr = start_proxy(up.url, env)
            started = time.perf_counter() - t0
            direct, through = _conn(up.url), _conn(proxy_url)
            # warm-up: the proxy opens the store and loads the model on its first recall (which
            # may miss the recall budget); go on until a call came back with memories, 5 at least
            proxy_threads = args.embed_threads
            for i, q in enumerate(prompts[:30]):
                warm.append(_ttfb(through, _chat(q))[0])
                _ttfb(direct, _chat(q))
                if i >= 4 and _injected(up.chats()[-2]):
                    break
            for r, qs in enumerate(round_qs):
                d, p, off = [], [], []
                for i, q in enumerate(qs):
                    body = _chat(q)
                    calls = [
                        ("d", lambda: d.append(_ttfb(direct, body)[0])),
                        ("p", lambda: p.append(_ttfb(through, body)[0])),
                        ("o", lambda: off.append(_ttfb(through, body, {"X-Mnemo-Recall": "off"})[0])),
                    ]
                    for kind, call in calls[i % 3:] + calls[: i % 3]:
                        call()
                        if kind == "p":
                            proxied += 1
                            injected += _injected(up.chats()[-1])
                added = [a - b for a, b in zip(p, d)]
                added_off = [a - b for a, b in zip(off, d)]
                rounds.append({name: (_pct(xs, 0.5), _pct(xs, 0.95))
                               for name, xs in (("p", p), ("d", d), ("o", off), ("add", added), ("add_off", added_off))})
                up.delay = 0.01
                try:
                    n0 = len(up.chats())
                    streams.append(concurrent_streams(proxy_url, prompts[-args.streams:]))
                    stream_mem.append(sum(_injected(c) for c in up.chats()[n0:]))
                    streams_off.append(concurrent_streams(proxy_url, prompts[-args.streams:], {"X-Mnemo-Recall": "off"}))
                finally:
                    up.delay = 0.0
                print(f"round {r + 1}: proxied p50 {rounds[-1]['p'][0] * 1000:.1f} ms, direct p50 {rounds[-1]['d'][0] * 1000:.1f} ms, "
                      f"added p50/p95 {rounds[-1]['add'][0] * 1000:.1f}/{rounds[-1]['add'][1] * 1000:.1f} ms; "
                      f"streams {streams[-1][0]}/{args.streams} in {streams[-1][1] * 1000:.0f} ms (recall off: {streams_off[-1][1] * 1000:.0f} ms)", file=sys.stderr)
            direct.close()
            through.close()
            stop_proxy(proc)
        recall, recording, rec_threads = recall_in_process(work, round_qs, args.embed_threads)
    finally:
        if proc is not None:
            stop_proxy(proc)
        shutil.rmtree(tmp, ignore_errors=True)

    def med(name: str) -> str:
        return " / ".join(f"{statistics.median(r[name][k] for r in rounds) * 1000:.1f} ms" for k in (0, 1))

    rec = " / ".join(f"{statistics.median(x[k] for x in recall) * 1000:.1f} ms" for k in (0, 1))
    logged = " / ".join(f"{statistics.median(x[k] for x in recording) * 1000:.1f} ms" for k in (0, 1))
    ok = min(s[0] for s in streams)
    wall = statistics.median(s[1] for s in streams) * 1000
    first = statistics.median(s[3] for s in streams) * 1000
    first_off = statistics.median(s[3] for s in streams_off) * 1000
    ok_off = min(s[0] for s in streams_off)
    wall_off = statistics.median(s[1] for s in streams_off) * 1000
    n = args.rounds * args.queries
    rows = [
        "| measure | p50 / p95 | target |", "|---|---|---|",
        f"| **added latency to the first streamed byte** (proxied − direct, per question; {args.size:,} memories, e5) | {med('add')} "
        f"| p50 ≤ 30 ms, p95 ≤ 80 ms |",
        f"| first byte through the proxy (recall + forward) | {med('p')} | — |",
        f"| first byte straight from the upstream | {med('d')} | — |",
        f"| added latency with recall off (`X-Mnemo-Recall: off`: forwarding alone) | {med('add_off')} | — |",
        f"| `Mnemo.context(record=False)` in-process, warm e5 on {rec_threads} thread(s), same store and questions (recall alone) | {rec} | — |",
        f"| `Mnemo.record_context` (access counts and the `mnemo log` entry, written while the answer streams) | {logged} | — |",
        f"| proxied calls that got a memory block | {injected} / {n} | — |",
        f"| {args.streams} concurrent streams (10 ms between events): replies exactly their own, worst round; wall time and slowest first byte, medians "
        f"| {ok} / {args.streams}; {wall:.0f} ms, {first:.0f} ms | {args.streams} / {args.streams}, no mixing |",
        f"| concurrent streams that got a memory block in time (recall runs one at a time; the budget is 2 s), per round "
        f"| {', '.join(f'{k} / {args.streams}' for k in stream_mem)} | — |",
        f"| the same with recall off (each reply alone takes ≥ 0.25 s) | {ok_off} / {args.streams}; {wall_off:.0f} ms, {first_off:.0f} ms | — |",
    ]
    table = "\n".join(rows)
    load_s = f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(table)
    print(load_s)
    print(f"embedding threads {proxy_threads} (the idle cores at the start of the run); proxy start {started:.1f} s; warm-up first-byte times through the proxy: " + ", ".join(f"{w * 1000:.0f} ms" for w in warm))
    problems = [p for s in streams + streams_off for p in s[2]]
    for line in problems[:10] + [f"proxy stderr: {s}" for s in stderr[-10:] if not s.startswith("point a chat client")]:
        print(line)
    if args.no_write:
        return
    section = (
        f"{START}\n## Memory proxy — `bench/proxy.py`\n\n"
        f"A real `mnemo proxy --no-capture` (capture off, so background capture does not compete with the timed calls) on the cached "
        f"{args.size:,}-memory store with e5, in front of a local fake OpenAI-compatible upstream that streams SSE. {args.rounds} rounds of "
        f"{args.queries} LoCoMo and Chinese questions, each new, each sent with `stream: true` straight to the upstream, through the proxy, and "
        f"through the proxy with recall off, in rotating order over three kept-alive connections; timed from sending the request to the first "
        f"body byte; medians of the per-round p50/p95. The proxy opens a new connection to the upstream per request, so its added latency "
        f"includes that; the fake upstream answers with TCP_NODELAY and a 128-deep listen backlog, as real servers do. The proxy's "
        f"embedding engine ran on {proxy_threads} thread(s) (the idle cores at the start of the run, the same for the in-process recall). Then {args.streams} threads stream "
        f"distinct replies through the proxy at once (and again with recall off), each checked to be exactly its own. "
        f"Latest run ({load_s}):\n\n{table}\n"
        + (f"\n{args.note}\n" if args.note else "") + f"{END}\n"
    )
    write_section(START, END, section)


if __name__ == "__main__":
    main()
