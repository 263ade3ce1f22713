"""mnemo ingest URL: pages served by a local HTTP server started here (redirects, limits, trickles)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mnemo import Mnemo
from mnemo._ingest.webpage import extract, fetch
from mnemo.errors import IngestError

ARTICLE = (Path(__file__).parent / "fixtures" / "notes" / "web" / "article.html").read_bytes()
GBK_PAGE = "<html><head><title>备份笔记</title></head><body><p>每天凌晨三点自动备份照片和文档到旧电脑上。</p></body></html>".encode("gbk")


class Site:
    """A local web server with good, redirecting, slow, endless, huge and wrong-type pages."""

    def __init__(self) -> None:
        site = self
        self.stop = threading.Event()
        self.article = ARTICLE

        class Handler(BaseHTTPRequestHandler):
            def _send(self, body: bytes, ctype: str = "text/html; charset=utf-8", length: bool = True) -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                if length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = self.path
                if path == "/article":
                    self._send(site.article)
                elif path == "/gbk":
                    self._send(GBK_PAGE, "text/html; charset=gbk")
                elif path.startswith("/hop/"):
                    n = int(path.rsplit("/", 1)[1])
                    self.send_response(302)
                    self.send_header("Location", "/article" if n == 0 else f"/hop/{n - 1}")
                    self.end_headers()
                elif path == "/to-file":
                    self.send_response(302)
                    self.send_header("Location", "file:///etc/passwd")
                    self.end_headers()
                elif path == "/trickle":  # one byte every 0.1 s, forever: only a total deadline ends it
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.end_headers()
                    try:
                        while not site.stop.is_set():
                            self.wfile.write(b"<p>a</p>")
                            self.wfile.flush()
                            time.sleep(0.1)
                    except OSError:
                        pass
                elif path == "/trickle-headers":  # the status line and headers, a byte every 0.2 s
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n<p>late</p>"
                    try:
                        for i in range(len(head)):
                            if site.stop.wait(0.2):
                                break
                            self.wfile.write(head[i:i + 1])
                    except OSError:  # the client gave up: what the test wants
                        pass
                    self.close_connection = True
                elif path.startswith("/slow-hop/"):  # each redirect well within the timeout, 0.4 s
                    n = int(path.rsplit("/", 1)[1])
                    site.stop.wait(0.4)
                    self.send_response(302)
                    self.send_header("Location", "/article" if n == 0 else f"/slow-hop/{n - 1}")
                    self.end_headers()
                elif path == "/stall":  # headers, then silence
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.end_headers()
                    self.wfile.flush()
                    site.stop.wait(10)
                elif path == "/huge":
                    self._send(b"<p>" + b"x" * 300_000 + b"</p>")
                elif path == "/huge-chunked":
                    self._send(b"<p>" + b"y" * 300_000 + b"</p>", length=False)
                elif path == "/image":
                    self._send(b"\x89PNG\r\n\x1a\n", "image/png")
                else:
                    self.send_response(404)
                    self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    yield s
    s.close()


def test_extract_keeps_the_main_text_and_drops_the_chrome() -> None:
    title, text = extract(ARTICLE.decode("utf-8"))
    assert title == "Choosing a vector index | Example Engineering Blog"
    assert "# Choosing a vector index" in text and "## When to use HNSW" in text
    assert "ef_search" in text and "```\nindex = hnsw.build" in text
    for chrome in ("TRACKING-SCRIPT-TEXT", "NAVIGATION-LINK-TEXT", "SIDEBAR-ASIDE-TEXT", "FOOTER-TEXT", "font-family"):
        assert chrome not in text


def test_ingest_url_stores_the_page_with_its_source(m: Mnemo, site: Site) -> None:
    url = site.url + "/article"
    report = m.ingest([url])
    assert report["ingested"] == 1 and report["chunks"] >= 2
    key = "url:" + url
    chunks = m.store.memories_by_source(key)
    assert all(c.source == key and c.metadata["origin"] == "web" for c in chunks)
    assert chunks[0].metadata["embed_prefix"].startswith("【Choosing a vector index")
    src = m.store.get_source(key)
    assert src["kind"] == "url" and src["title"].startswith("Choosing a vector index") and src["metadata"]["url"] == url
    hits = m.recall("HNSW graph index", touch=False)
    assert hits and hits[0].memory.source == key
    assert m.ingest([url])["unchanged"] == 1  # the same text again: nothing to do
    site.article = ARTICLE.replace(b"four", b"eight")
    again = m.ingest([url])
    assert again["ingested"] == 1 and again["superseded"] == 1


def test_redirects_are_bounded_and_checked(m: Mnemo, site: Site) -> None:
    assert fetch(site.url + "/hop/3").final_url.endswith("/article")
    with pytest.raises(IngestError, match="more than 5 redirects"):
        fetch(site.url + "/hop/9")
    with pytest.raises(IngestError, match="file:///etc/passwd' is not allowed"):
        fetch(site.url + "/to-file")


def test_a_page_that_trickles_forever_hits_the_total_deadline(site: Site) -> None:
    t0 = time.monotonic()
    with pytest.raises(IngestError, match="did not finish within the 1.5 s deadline"):
        fetch(site.url + "/trickle", timeout=5, deadline=1.5)
    assert time.monotonic() - t0 < 3.5
    t0 = time.monotonic()
    with pytest.raises(IngestError, match="stalled"):
        fetch(site.url + "/stall", timeout=0.5, deadline=5)
    assert time.monotonic() - t0 < 2


def test_headers_that_trickle_in_hit_the_total_deadline(site: Site) -> None:
    # each byte comes well within the 5 s timeout, so only a deadline over the whole fetch,
    # headers included, ends it (it used to take one timeout per byte, not the deadline)
    before = set(threading.enumerate())
    t0 = time.monotonic()
    with pytest.raises(IngestError, match="did not finish within the 1 s deadline"):
        fetch(site.url + "/trickle-headers", timeout=5, deadline=1)
    assert time.monotonic() - t0 < 2
    # the server's own request threads aside, the fetch left nothing running behind it
    assert [t.name for t in set(threading.enumerate()) - before if "process_request" not in t.name] == []


def test_the_deadline_covers_every_redirect(site: Site) -> None:
    assert fetch(site.url + "/slow-hop/1", timeout=5, deadline=5).final_url.endswith("/article")
    t0 = time.monotonic()
    with pytest.raises(IngestError, match="did not finish within the 1 s deadline"):
        fetch(site.url + "/slow-hop/4", timeout=5, deadline=1)  # 2 s of hops, each 0.4 s
    assert time.monotonic() - t0 < 2


def test_bad_pages_are_reported_and_the_rest_is_ingested(m: Mnemo, site: Site, tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_text("# Note\n\nStill ingested.\n", "utf-8")
    report = m.ingest([site.url + "/trickle", site.url + "/image", site.url + "/huge", site.url + "/huge-chunked",
                       site.url + "/missing", "ftp://example.com/x", "http://127.0.0.1:9/", str(note)],
                      web_deadline=1.0, max_bytes=100_000)
    reasons = {s["path"].rsplit("/", 1)[-1]: s["reason"] for s in report["skipped"]}
    assert report["ingested"] == 1
    assert "deadline" in reasons["trickle"]
    assert "image/png" in reasons["image"]
    assert "limit" in reasons["huge"] and "limit" in reasons["huge-chunked"]
    assert reasons["missing"] == "HTTP 404 Not Found"
    assert "only http and https" in reasons["x"]
    assert reasons[""].startswith("cannot fetch")


def test_charset_from_the_server_is_honoured(m: Mnemo, site: Site) -> None:
    m.ingest([site.url + "/gbk"])
    (mem,) = m.store.memories_by_source("url:" + site.url + "/gbk")
    assert "自动备份照片" in mem.content and mem.metadata["title"] == "备份笔记"


def test_cli_ingest_url(cli, site: Site) -> None:
    r = cli("ingest", site.url + "/article", "--json")
    assert r.code == 0 and r.json()["ingested"] == 1
    r = cli("ingest", site.url + "/trickle", "--deadline", "1", "--json")
    assert r.code == 2 and "deadline" in r.json()["error"]
