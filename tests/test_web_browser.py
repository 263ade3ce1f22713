"""mnemo web in a real browser: headless Chromium (Playwright) against a real ``mnemo web``.

Each test logs a fresh browser context in through the printed one-time link and uses the pages
as a person would (typing, clicking, uploading); the API (``web.api``, bearer token) is only
used to set a store up and to check what the page did to it. Every tab also watches what the
page must never do: throw, break the CSP, or open a dialog. Screenshots of every page, in
English and Chinese, desktop and phone, go to the ``artefacts`` folder.
"""

# ruff: noqa: F811  (the fixtures imported from webserver are test parameters of the same name)
from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from webserver import WebServer, artefacts, browser, web, web_real  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

STATIC = Path(__file__).resolve().parent.parent / "src" / "mnemo" / "_web" / "static"
#: every page that needs no memory id, as its hash route
PAGES = ["search?q=database", "add", "timeline", "review", "capture", "ingest", "stats"]
WAIT = 15_000  # ms: the longest a page may take to show a change (a search, a save, a reload)


class Tab:
    """One logged-in page of the app, and what it said on the console."""

    def __init__(self, page: Any, server: WebServer) -> None:
        self.page = page
        self.server = server
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda msg: self.console.append((msg.type, msg.text)))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def go(self, route: str) -> Any:
        """Open ``#/route`` and return its <main> once it is there."""
        self.page.goto(f"{self.server.url}/#/{route}")
        main = self.page.locator(f"#page-{re.split(r'[/?]', route)[0]}")
        main.wait_for(timeout=WAIT)
        return main

    def settle(self) -> None:
        """Wait until the page has made its API calls and drawn their answers."""
        self.page.wait_for_load_state("networkidle")

    def problems(self) -> list[str]:
        """What no page may ever do: an uncaught error, a CSP violation, a dialog (alert)."""
        csp = [text for _, text in self.console if "Content Security Policy" in text or "Refused to" in text]
        return self.errors + csp + [f"dialog: {d}" for d in self.dialogs]

    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind == "error"]


@contextmanager
def opened(browser: Any, server: WebServer, *, lang: str = "en", size: tuple[int, int] = (1100, 900),
           login: bool = True) -> Iterator[Tab]:
    """A fresh browser context (its own cookies, storage and service worker) on ``server``."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]}, locale="zh-CN" if lang == "zh" else "en-US")
    try:
        tab = Tab(context.new_page(), server)
        if login:
            server.login(tab.page)
            tab.page.locator("#page-search").wait_for(timeout=WAIT)
        yield tab
        assert tab.problems() == []
    finally:
        context.close()


@pytest.fixture
def tab(browser: Any, web: WebServer) -> Iterator[Tab]:
    """A logged-in English page on the test's server."""
    with opened(browser, web) as t:
        yield t


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def save(server: WebServer, content: str, **fields: Any) -> dict[str, Any]:
    """Save through the API; returns ``{"action", "memory"}``."""
    status, out = server.api("POST", "/memories", {"content": content, **fields})
    assert status == 201, out
    return out


def contents(server: WebServer) -> list[str]:
    return sorted(r["content"] for r in server.api("GET", "/memories?limit=500")[1]["results"])


def no_sideways_scroll(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


# ---------------------------------------------------------------- saving and finding


def test_add_a_memory_in_the_page_and_find_it_by_a_chinese_query(web, tab) -> None:
    page = tab.page
    tab.go("add")
    page.fill("#new-content", "项目的数据库用 PostgreSQL 16，缓存用 Redis")
    page.select_option("#new-type", "project_context")
    page.fill("#new-tags", "stack, db")
    page.click("#new-save")
    expect(page.locator("#new-result")).to_contain_text("Created", timeout=WAIT)
    mid = page.get_attribute("#new-link", "href").rsplit("/", 1)[1]
    memory = web.api("GET", f"/memories/{mid}")[1]["memory"]
    assert memory["type"] == "project_context" and set(memory["tags"]) == {"stack", "db"} and memory["source"] == "web"

    tab.go("search")
    page.fill("#q", "数据库")
    hit = page.locator(f".hit[data-id='{mid}']")
    expect(hit).to_be_visible(timeout=WAIT)
    assert "数据库" in hit.locator("mark").all_text_contents()
    hit.locator(".why summary").click()
    expect(hit.locator(".why dl")).to_contain_text("score")
    assert "#/search?q=" in page.url  # the query survives a reload


@pytest.mark.model
def test_search_across_languages_english_saved_chinese_asked(browser, web_real) -> None:
    for other in ("I take my coffee with oat milk", "The office plants are watered on Mondays"):
        save(web_real, other)
    with opened(browser, web_real) as tab:
        page = tab.page
        tab.go("add")
        page.fill("#new-content", "We use PostgreSQL 16 for the main database")
        page.click("#new-save")
        expect(page.locator("#new-link")).to_be_visible(timeout=60_000)
        tab.go("search")
        page.fill("#q", "我们的主数据库用的是什么？")  # no word in common: found by meaning
        expect(page.locator(".hit").first).to_contain_text("PostgreSQL 16", timeout=60_000)


# ---------------------------------------------------------------- one memory's life


def test_edit_shows_both_versions_in_the_history_and_restore_brings_the_old_text_back(web, tab) -> None:
    old, new = "The API rate limit is 100 requests per minute", "The API rate limit is 250 requests per minute"
    mid = save(web, old)["memory"]["id"]
    page = tab.page
    tab.go(f"memory/{mid}")
    expect(page.locator("#mem-content")).to_have_text(old, timeout=WAIT)
    page.click("#edit")
    page.fill("#edit-content", new)
    page.click("#edit-save")
    expect(page.locator("#mem-content")).to_have_text(new, timeout=WAIT)
    events = page.locator("#history > li")
    expect(events).to_have_count(2)
    expect(events.nth(1)).to_have_attribute("data-kind", "updated")
    expect(events.nth(1).locator(".before")).to_contain_text(old)

    page.click("#restore")
    expect(page.locator("#mem-content")).to_have_text(old, timeout=WAIT)
    expect(events).to_have_count(3)
    expect(events.nth(2).locator(".before")).to_contain_text(new)  # the undo is history too
    assert web.api("GET", f"/memories/{mid}")[1]["memory"]["content"] == old


def test_forget_then_restore(web, tab) -> None:
    mid = save(web, "The build server lives in the basement rack")["memory"]["id"]
    page = tab.page
    tab.go(f"memory/{mid}")
    article = page.locator(f"article.memory[data-id='{mid}']")
    expect(article).to_have_attribute("data-status", "active", timeout=WAIT)
    page.click("#forget")
    expect(article).to_have_attribute("data-status", "deleted", timeout=WAIT)
    expect(page.locator("#forget")).to_be_disabled()
    assert web.api("GET", f"/memories/{mid}")[1]["memory"]["status"] == "deleted"
    page.click("#restore")
    expect(article).to_have_attribute("data-status", "active", timeout=WAIT)
    assert web.api("GET", f"/memories/{mid}")[1]["memory"]["status"] == "active"


def test_purge_asks_first_and_deletes_only_on_the_explicit_button(web, tab) -> None:
    mid = save(web, "A throwaway note about the old printer")["memory"]["id"]
    page = tab.page
    tab.go(f"memory/{mid}")
    page.click("#purge")
    expect(page.locator("#purge-confirm")).to_be_visible(timeout=WAIT)
    assert web.api("GET", f"/memories/{mid}")[0] == 200  # asking deleted nothing
    page.click("#purge-cancel")
    expect(page.locator("#purge-confirm")).to_be_hidden()
    page.click("#purge")
    page.click("#purge-confirm")
    expect(page.locator("#purged")).to_be_visible(timeout=WAIT)
    assert web.api("GET", f"/memories/{mid}")[0] == 404


# ---------------------------------------------------------------- documents and capture


def test_upload_a_markdown_file_and_find_its_text(web, tab, tmp_path: Path) -> None:
    doc = tmp_path / "garden.md"
    doc.write_text("# Garden notes\n\nThe tomatoes in the greenhouse need watering every second morning.\n", "utf-8")
    page = tab.page
    tab.go("ingest")
    page.set_input_files("#ingest-file", str(doc))
    expect(page.locator("#ingest-results li.ok")).to_contain_text("garden.md", timeout=WAIT)
    expect(page.locator("#sources .source")).to_contain_text("Garden notes", timeout=WAIT)
    tab.go("search")
    page.fill("#q", "greenhouse tomatoes")
    expect(page.locator(".hit").first).to_contain_text("watering every second morning", timeout=WAIT)
    assert {m.lower() for m in page.locator(".hit").first.locator("mark").all_text_contents()} >= {"greenhouse", "tomatoes"}


def test_capture_saves_only_the_ticked_items(web, tab) -> None:
    page = tab.page
    tab.go("capture")
    page.fill("#capture-text", "我喜欢用 Neovim 写代码。我们决定用 Redis 做缓存。项目必须支持 Python 3.10。今天天气不错。")
    page.click("#capture-preview")
    items = page.locator(".capture-item")
    expect(items).to_have_count(3, timeout=WAIT)
    assert all(items.nth(i).is_checked() for i in range(3))  # ticked by default
    assert web.api("GET", "/stats")[1]["total"] == 0  # a preview saves nothing
    page.locator(".detected", has_text="Redis").locator(".capture-item").uncheck()
    page.click("#capture-save")
    expect(page.locator("#capture-result li")).to_have_count(2, timeout=WAIT)
    assert contents(web) == sorted(["我喜欢用 Neovim 写代码", "项目必须支持 Python 3.10"])


# ---------------------------------------------------------------- review


def test_review_undo_splits_a_merge_again(web, tab) -> None:
    first = save(web, "The staging database is backed up every night")
    assert save(web, "The staging database is backed up every night.")["action"] == "merged"
    assert contents(web) == ["The staging database is backed up every night"]
    page = tab.page
    tab.go("review")
    undo = page.locator(f".change[data-kind='merged'][data-id='{first['memory']['id']}'] .undo")
    expect(undo).to_be_visible(timeout=WAIT)
    undo.click()
    expect(page.locator("#status")).to_contain_text("Undone", timeout=WAIT)
    expect(page.locator(".change[data-kind='merged'] .undo")).to_have_count(0)  # the list reloaded: nothing left to undo
    assert contents(web) == ["The staging database is backed up every night", "The staging database is backed up every night."]


def test_review_confirms_an_expired_memory(web, tab) -> None:
    mid = save(web, "The VPN certificate is valid")["memory"]["id"]
    web.api("PATCH", f"/memories/{mid}", {"expires": "2020-01-01"})
    page = tab.page
    tab.go("review")
    due = page.locator(f"#review-due li.due[data-id='{mid}']")
    expect(due).to_be_visible(timeout=WAIT)
    due.locator("button.confirm").click()
    expect(page.locator("#review-due li.due")).to_have_count(0, timeout=WAIT)
    assert web.api("GET", "/review")[1]["results"] == []


# ---------------------------------------------------------------- stats


def test_stats_page_shows_the_stores_numbers(web, tab) -> None:
    for content, type_, scope in [("Use ruff for linting", "decision", "global"), ("Deploys happen on Fridays", "fact", "global"),
                                  ("Prefer tabs", "user_preference", "global"), ("The alpha app is written in Kotlin", "fact", "project:alpha"),
                                  ("Alpha releases need two approvals", "constraint", "project:alpha")]:
        save(web, content, type=type_, scope=scope)
    web.api("POST", "/context", {"query": "linting"})
    page = tab.page
    tab.go("stats")
    stats = web.api("GET", "/stats")[1]
    expect(page.locator("#stat-total")).to_have_text(str(stats["total"]), timeout=WAIT)
    expect(page.locator("#stat-last7")).to_have_text(str(stats["last_7_days"]))
    expect(page.locator("#stat-vectors")).to_have_text(str(stats["vectors"]))
    expect(page.locator("#stat-model")).to_have_text(str(stats["model"]))

    def bars(chart: str) -> dict[str, int]:
        """Each bar's series and number as the chart carries them, summed per series."""
        out: dict[str, int] = {}
        for series, value in page.evaluate(f"""[...document.querySelectorAll('#{chart} rect.bar')]
            .map(r => [r.getAttribute('data-series'), Number(r.getAttribute('data-value'))])"""):
            out[series] = out.get(series, 0) + value
        return out

    assert bars("chart-type") == stats["by_type"]
    assert bars("chart-scope") == stats["by_scope"]
    activity = stats["activity"]
    assert bars("chart-weekly") == {t: sum(v) for t, v in activity["created_by_type"].items() if sum(v)}
    assert bars("chart-injections") == ({"injections": sum(activity["injections"])} if sum(activity["injections"]) else {})
    assert sum(activity["injections"]) == 1
    # the weekly bar of the current week (the last label) holds all five saves
    last_week = activity["weeks"][-1][5:10]
    assert page.evaluate(f"""[...document.querySelectorAll('#chart-weekly rect.bar[data-label="{last_week}"]')]
        .reduce((n, r) => n + Number(r.getAttribute('data-value')), 0)""") == 5
    size = page.locator("#stat-size").inner_text()
    number, unit = size.split()
    assert abs(float(number) * (1024 if unit == "KB" else 1048576) - stats["store_bytes"]) <= max(0.05 * stats["store_bytes"], 1024)


# ---------------------------------------------------------------- every page: phone, languages, console


def _seed_every_page(server: WebServer) -> str:
    """A store with something on every page (links, an expired memory, a merge, a document, long
    unbreakable text); returns the id of a memory that has links."""
    a = save(server, "The payments service is written in Go")["memory"]["id"]
    save(server, "The payments service moved from Go to Rust", type="decision")
    save(server, "The staging database is backed up every night")
    save(server, "The staging database is backed up every night.")
    save(server, "Longest word: " + "Donaudampfschifffahrtsgesellschaftskapitän" * 6 + " https://example.com/" + "a/" * 60,
         scope="project:" + "a-very-long-project-name" * 3, tags=["t" * 60])
    save(server, "数据库用 PostgreSQL，部署在一台 VPS 上" + "很长的中文没有空格" * 20, type="project_context")
    expired = save(server, "The VPN certificate is valid")["memory"]["id"]
    server.api("PATCH", f"/memories/{expired}", {"expires": "2020-01-01"})
    status, _ = server.api("POST", "/ingest?filename=notes.md", raw=b"# Notes\n\nThe database runs on the quiet server.\n",
                           headers={"Content-Type": "application/octet-stream"})
    assert status == 200
    server.api("POST", "/context", {"query": "database"})
    return a


def _every_route(mid: str) -> list[str]:
    return [*PAGES, f"memory/{mid}", f"graph/{mid}"]


def _shot_name(route: str) -> str:
    return re.split(r"[/?]", route)[0]


def test_no_horizontal_scroll_on_a_phone(browser, web, artefacts) -> None:
    mid = _seed_every_page(web)
    for lang in ("en", "zh"):
        with opened(browser, web, lang=lang, size=(375, 740)) as tab:
            wide = []
            for route in _every_route(mid):
                tab.go(route)
                tab.settle()
                if not no_sideways_scroll(tab.page):
                    wide.append(route)
                tab.page.screenshot(path=str(artefacts / f"phone-{lang}-{_shot_name(route)}.png"), full_page=True)
            assert wide == [], f"{lang}: pages wider than the phone: {wide}"


def test_every_page_in_both_languages_without_console_errors(browser, web, artefacts) -> None:
    mid = _seed_every_page(web)
    for lang, html_lang, nav_search in (("en", "en", "Search"), ("zh", "zh-CN", "搜索")):
        with opened(browser, web, lang=lang) as tab:
            page = tab.page
            expect(page.locator("html")).to_have_attribute("lang", html_lang)
            expect(page.locator("nav a[data-route='search']")).to_have_text(nav_search)
            for route in _every_route(mid):
                main = tab.go(route)
                tab.settle()
                expect(main).not_to_contain_text("undefined")  # no field shown that the data lacks
                page.screenshot(path=str(artefacts / f"{lang}-{_shot_name(route)}.png"), full_page=True)
            assert page.locator("#graph-svg .node").count() >= 2  # the last page: the linked memory's graph
            assert tab.console_errors() == [], f"{lang}: {tab.console_errors()}"


def test_language_switch_is_remembered(browser, web) -> None:
    with opened(browser, web, lang="en") as tab:
        page = tab.page
        page.click("#lang")
        expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
        expect(page.locator("nav a[data-route='stats']")).to_have_text("统计")
        expect(page.locator("#page-search h1")).to_have_text("搜索记忆")  # the page itself re-rendered
        page.reload()
        expect(page.locator("nav a[data-route='stats']")).to_have_text("统计", timeout=WAIT)
        page.click("#lang")
        expect(page.locator("html")).to_have_attribute("lang", "en")


# ---------------------------------------------------------------- safety and failure


def test_markup_in_a_memory_renders_as_text(web, tab) -> None:
    texts = ["<script>alert(1)</script> script alert test", "<img src=x onerror=alert(2)> img alert test"]
    ids = [save(web, text)["memory"]["id"] for text in texts]
    page = tab.page
    tab.go("search?q=" + quote("alert test"))
    for mid, text in zip(ids, texts):
        expect(page.locator(f".hit[data-id='{mid}'] .content")).to_have_text(text, timeout=WAIT)
    tab.go(f"memory/{ids[1]}")
    expect(page.locator("#mem-content")).to_have_text(texts[1], timeout=WAIT)
    tab.go("timeline")
    expect(page.locator("#days")).to_contain_text(texts[0], timeout=WAIT)
    page.wait_for_timeout(500)  # time for an onerror to fire, if an <img> had been made
    assert page.locator("#view img, #view script").count() == 0
    assert tab.dialogs == []


def test_without_login_the_page_says_how_to_log_in(browser, web) -> None:
    with opened(browser, web, login=False) as tab:
        tab.page.goto(web.url + "/")
        expect(tab.page.locator("#login-needed")).to_be_visible(timeout=WAIT)
        expect(tab.page.locator("#offline-banner")).to_be_hidden()


def test_service_worker_keeps_the_shell_when_the_server_stops(browser, web) -> None:
    with opened(browser, web) as tab:
        page = tab.page
        # (wait_for_function would evaluate a string in the page, which the CSP forbids)
        page.evaluate("""navigator.serviceWorker.ready.then(() => navigator.serviceWorker.controller || new Promise(
            (done) => navigator.serviceWorker.addEventListener('controllerchange', done)))""")
        assert page.evaluate("navigator.serviceWorker.controller.scriptURL").endswith("/sw.js")
        # API answers are never cached: only the shell's own files are
        cached = page.evaluate("caches.keys().then(ks => Promise.all(ks.map(k => caches.open(k).then(c => c.keys()))))"
                               ".then(lists => lists.flat().map(r => new URL(r.url).pathname))")
        assert "/" in cached and "/static/app.js" in cached and not [p for p in cached if p.startswith("/api/")]
        expect(page.locator("#offline-banner")).to_be_hidden()
        web.stop()
        page.reload()
        expect(page.locator("#offline-banner")).to_be_visible(timeout=WAIT)
        expect(page.locator("nav a[data-route='timeline']")).to_be_visible()
        expect(page.locator("#page-search")).to_be_visible()


def test_the_service_worker_caches_every_shipped_file_and_the_app_stays_small() -> None:
    """The offline shell is only whole if sw.js lists every file (a new module must be added
    there); the whole app, gzipped, stays far below the 200 KB budget."""
    files = {p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    shell = set(re.findall(r'"(/[^"]*)"', re.search(r"const SHELL = \[(.*?)\];", (STATIC / "sw.js").read_text("utf-8"), re.DOTALL).group(1)))
    served = {"/" if f == "index.html" else "/manifest.webmanifest" if f == "manifest.webmanifest" else f"/static/{f}"
              for f in files if f != "sw.js"}
    assert shell == served
    assert sum(len(gzip.compress(p.read_bytes())) for p in STATIC.rglob("*") if p.is_file()) < 60_000
