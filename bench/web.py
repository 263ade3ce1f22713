"""The web app's speed: the search API, the first page, and the size of what it ships.

    python bench/web.py [--size 10000] [--queries 60] [--rounds 3] [--loads 10] [--no-write]

On a copy of the speed benchmark's cached 10k-memory store with the real e5 model, a real
``mnemo web`` (its own process, as a person starts it) answers:

* **search API**: ``GET /api/v1/search?q=…`` over one kept-alive connection, LoCoMo and Chinese
  questions, each a new query (so every call embeds its query with the warm model, then
  retrieves, ranks and explains); the HTTP floor, ``GET /api/v1/info``'s cheapest sibling
  (``/api/v1/memories?limit=1``), is measured in the same run;
* **first page**: the system Chromium (Playwright), logged in, loads ``/#/search``;
  DOMContentLoaded and the load event from the Navigation Timing entry, fresh context each
  load (nothing cached but what the server says may be);
* **shipped assets**: every file under ``mnemo/_web/static``, gzip -9, summed.

Targets (issue 17): search p50 ≤ 30 ms with the warm model at 10k memories, DOMContentLoaded ≤
300 ms locally, assets ≤ 200 KB compressed. Results go to the "Web app" section of
bench/README.md (medians over rounds).
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

import mnemo  # noqa: E402,F401  before numpy, as every entry point
from bench import _corpus  # noqa: E402
from bench._readme import write_section  # noqa: E402

START, END = "<!-- web:start -->", "<!-- web:end -->"
CHROMIUM = os.environ.get("MNEMO_TEST_CHROMIUM") or "/usr/bin/chromium"


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _timed(conn: http.client.HTTPConnection, path: str, token: str) -> float:
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    resp = conn.getresponse()
    body = resp.read()
    dt = time.perf_counter() - t0
    if resp.status != 200:
        raise SystemExit(f"{path}: HTTP {resp.status} {body[:200]!r}")
    return dt


def assets_size() -> tuple[int, int, int]:
    """(files, bytes, gzip -9 bytes) of everything the app ships."""
    static = ROOT / "src" / "mnemo" / "_web" / "static"
    files = [p for p in static.rglob("*") if p.is_file()]
    raw = sum(p.stat().st_size for p in files)
    packed = sum(len(gzip.compress(p.read_bytes(), 9)) for p in files)
    return len(files), raw, packed


def page_loads(server, n: int) -> tuple[list[float], list[float]]:
    """DOMContentLoaded and load (ms from navigation start) of ``/#/search``, ``n`` fresh loads."""
    from playwright.sync_api import sync_playwright

    dcl, load = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.fresh_login())  # the session cookie
        page.wait_for_load_state("load")
        cookies = context.cookies()
        for i in range(n + 1):
            ctx = browser.new_context(service_workers="block")  # a first visit: no worker-served shell
            ctx.add_cookies(cookies)
            pg = ctx.new_page()
            pg.goto(server.url + "/#/search", wait_until="load")
            nav = pg.evaluate("() => { const e = performance.getEntriesByType('navigation')[0]; "
                              "return [e.domContentLoadedEventEnd - e.startTime, e.loadEventEnd - e.startTime]; }")
            if i:  # the first load warms the server's file reads
                dcl.append(nav[0])
                load.append(nav[1])
            ctx.close()
        browser.close()
    return dcl, load


def main() -> None:
    from webserver import start_web

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=60, help="search calls per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", type=int, default=10, help="page loads")
    ap.add_argument("--no-write", action="store_true", help="do not update bench/README.md")
    ap.add_argument("--note", default="", help="a sentence on the run's conditions, added to bench/README.md")
    args = ap.parse_args()

    src = _corpus.build_store(args.size, log=lambda s: print(s, file=sys.stderr))
    tmp = Path(tempfile.mkdtemp(prefix="mnemo-web-"))
    work = tmp / "memory.db"
    shutil.copyfile(src, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(tmp / "home"), MNEMO_DB=str(work), MNEMO_MODEL="e5", MNEMO_SCOPE="project:a")
    os.environ.update(env)  # the helper's token and login commands read the same store
    prompts = _corpus.queries()
    load_before = os.getloadavg()[0]
    server = start_web(env=env, timeout=300)
    try:
        u = urlsplit(server.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        for q in prompts[:5]:  # the model's first calls, the index's first scan
            _timed(conn, "/api/v1/search?k=10&q=" + quote(q), server.token)
        rounds, floors = [], []
        for r in range(args.rounds):
            qs = prompts[5 + r * args.queries: 5 + (r + 1) * args.queries]
            t = [_timed(conn, "/api/v1/search?k=10&q=" + quote(q), server.token) for q in qs]
            f = [_timed(conn, "/api/v1/memories?limit=1", server.token) for _ in range(20)]
            rounds.append((_pct(t, 0.5), _pct(t, 0.95)))
            floors.append(_pct(f, 0.5))
        conn.close()
        dcl, load = page_loads(server, args.loads)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    p50 = statistics.median(p for p, _ in rounds) * 1000
    p95 = statistics.median(q for _, q in rounds) * 1000
    floor = statistics.median(floors) * 1000
    n_files, raw, packed = assets_size()
    rows = [
        "| measure | result | target |", "|---|---|---|",
        f"| search API p50 / p95 ({args.size:,} memories, e5, query embedded per call) | {p50:.1f} ms / {p95:.1f} ms | p50 ≤ 30 ms |",
        f"| HTTP floor (`/api/v1/memories?limit=1`) p50 | {floor:.1f} ms | — |",
        f"| first page DOMContentLoaded, median / max | {statistics.median(dcl):.0f} ms / {max(dcl):.0f} ms | ≤ 300 ms |",
        f"| first page load event, median | {statistics.median(load):.0f} ms | — |",
        f"| shipped assets ({n_files} files) | {raw / 1024:.0f} KB, {packed / 1024:.1f} KB gzip -9 | ≤ 200 KB compressed |",
    ]
    table = "\n".join(rows)
    load_s = f"load average {load_before:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(table)
    print(load_s)
    if args.no_write:
        return
    section = (
        f"{START}\n## Web app — `bench/web.py`\n\n"
        f"A real `mnemo web` on the cached {args.size:,}-memory store with e5; {args.rounds} rounds of {args.queries} search calls "
        f"(LoCoMo and Chinese questions, each new, over one kept-alive connection), medians of the per-round p50/p95; "
        f"{args.loads} first-visit page loads in headless Chromium. Latest run ({load_s}):\n\n{table}\n"
        + (f"\n{args.note}\n" if args.note else "") + f"{END}\n"
    )
    write_section(START, END, section)


if __name__ == "__main__":
    main()
