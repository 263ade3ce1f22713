"""Fetching a web page and extracting its main text, with hard limits.

``fetch`` takes only http/https, follows at most ``MAX_REDIRECTS`` redirects (each checked
again), stops at ``max_bytes``, and holds a *total* deadline across connecting, the TLS
handshake, the status line and headers, every redirect and the body: a server that trickles a
byte at a time, or never ends, is cut off when the deadline passes, not merely when one read
stalls (see "the total deadline" below). Only HTML and plain text are taken.

Extraction uses the standard library's ``HTMLParser`` rather than a dependency: pages for a
memory store need headings and paragraphs, not layout fidelity, and the stdlib parser is
forgiving of broken markup. Navigation, scripts, styles, headers, footers, asides and forms
are dropped; when the page marks its content with ``<main>`` or ``<article>``, only that is
kept. Headings become Markdown headings so the chunker keeps the page's structure.
"""

from __future__ import annotations

import functools
import http.client
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from html import unescape
from html.parser import HTMLParser
from typing import Any

from ..errors import IngestError

MAX_REDIRECTS = 5
DEFAULT_TIMEOUT = 10.0  # seconds for the connection and any one read
DEFAULT_DEADLINE = 30.0  # seconds for the whole fetch
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown")
_USER_AGENT = "mnemo-ingest/0.1 (+local memory store)"


@dataclass
class Page:
    """A fetched page: where it ended up, its type and charset, and its bytes."""

    url: str
    final_url: str
    content_type: str
    charset: str | None
    data: bytes


def is_url(text: str) -> bool:
    """Whether an ingest argument is meant as a URL (any ``scheme://``), not a path."""
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text))


def check_url(url: str) -> str:
    """The URL if it is http(s) with a host, else :class:`IngestError`."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # e.g. "https://[::1": an unclosed IPv6 bracket
        raise IngestError(f"not a valid URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise IngestError(f"only http and https URLs can be ingested, not {parts.scheme or 'no scheme'}:")
    if not host:
        raise IngestError("the URL has no host")
    return url


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Counts redirects and refuses ones to other schemes (file:, ftp:)."""

    def __init__(self) -> None:
        self.count = 0

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        self.count += 1
        if self.count > MAX_REDIRECTS:
            raise IngestError(f"more than {MAX_REDIRECTS} redirects")
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


# ---------------------------------------------------------------- the total deadline
#
# urllib's ``timeout`` bounds each socket operation, not the fetch: a server that sends one
# byte of its status line or headers just inside the timeout keeps a fetch going for as long
# as it likes (a 4 s deadline once took 12 s). So every connection of one fetch (redirects
# open new ones) shares a :class:`_Clock`, and every wait on the network is given at most
# what is left of the deadline: the connect of each address, the TLS handshake (which Python
# bounds as a whole by the socket's timeout), sending the request, and every receive. All of
# it runs in the calling thread; nothing is left behind when the fetch ends. Name resolution
# is the one step that cannot be cut short without a thread: the deadline is checked as soon
# as it returns.


class _DeadlinePassed(TimeoutError):
    """The fetch's total deadline passed. A ``TimeoutError`` like the socket's own, so that
    ``http.client`` lets it through as it does a timeout: an ``IngestError`` is a ``ValueError``,
    which its chunked-body parser would turn into ``IncompleteRead``."""


class _Clock:
    """The deadline of one fetch, shared by its connections."""

    def __init__(self, timeout: float, deadline: float) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.end = time.monotonic() + deadline

    def budget(self) -> float:
        """How long the next wait may take: the per-read timeout, or what is left of the
        deadline if that is less; :class:`_DeadlinePassed` when nothing is left."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed(self.message())
        return min(self.timeout, left)

    def passed(self) -> bool:
        """Whether the deadline has passed (a timeout then was the deadline's doing)."""
        return time.monotonic() >= self.end

    def message(self) -> str:
        return f"the page did not finish within the {self.deadline:g} s deadline"

    def connect(self, address: tuple[str, int], timeout: Any = None, source_address: Any = None) -> socket.socket:
        """``socket.create_connection`` with every attempt bounded by the deadline (the stdlib
        gives each address the full timeout); the socket it returns bounds its own waits.
        ``timeout`` is http.client's (the clock's own stands in for it)."""
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, addr in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            budget = self.budget()
            sock = _Socket(family, kind, proto)
            try:
                sock.settimeout(budget)
                if source_address:
                    sock.bind(source_address)
                sock.connect(addr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.clock = self
            sock.settimeout(self.budget())  # what the TLS handshake, if any, may take in all
            return sock
        self.budget()  # the attempts used up the deadline: say so rather than "timed out"
        raise error or OSError(f"no address found for {host}")


class _Bounded:
    """Mixed into the socket classes: each receive and send waits at most ``clock.budget()``,
    and a wait cut short by the deadline raises :class:`_DeadlinePassed`, not a bare timeout."""

    clock: _Clock | None = None

    def _bounded(self, call: Callable[[], Any]) -> Any:
        clock = self.clock
        if clock is None:
            return call()
        budget = clock.budget()
        self.settimeout(budget)  # type: ignore[attr-defined]
        try:
            return call()
        except TimeoutError:  # socket.timeout is TimeoutError since Python 3.10
            if budget < clock.timeout:  # the deadline, not the server's silence, ended the wait
                raise _DeadlinePassed(clock.message()) from None
            raise

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        return self._bounded(lambda: super(_Bounded, self).recv_into(*args, **kwargs))  # type: ignore[misc]

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        return self._bounded(lambda: super(_Bounded, self).recv(*args, **kwargs))  # type: ignore[misc]

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        return self._bounded(lambda: super(_Bounded, self).sendall(*args, **kwargs))  # type: ignore[misc]


class _Socket(_Bounded, socket.socket):
    pass


class _SSLSocket(_Bounded, ssl.SSLSocket):
    pass


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, clock: _Clock, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # http.client opens its socket through this attribute (it is there to be replaced)
        self._create_connection = clock.connect


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, clock: _Clock, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = clock.connect
        self._clock = clock

    def connect(self) -> None:
        super().connect()  # TCP through clock.connect, then the handshake within its budget
        # the handshake made a new _SSLSocket object: the TCP socket's clock is not carried over
        self.sock.clock = self._clock  # type: ignore[union-attr]


class _Handler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """Opens http and https connections that keep to one fetch's clock."""

    def __init__(self, clock: _Clock) -> None:
        urllib.request.HTTPHandler.__init__(self)
        self.clock = clock
        self.context = ssl.create_default_context()
        self.context.sslsocket_class = _SSLSocket  # the documented hook for a custom SSLSocket
        self.context.set_alpn_protocols(["http/1.1"])  # as urllib's own context says

    def http_open(self, req: Any) -> Any:
        return self.do_open(functools.partial(_HTTPConnection, clock=self.clock), req)

    def https_open(self, req: Any) -> Any:
        return self.do_open(functools.partial(_HTTPSConnection, clock=self.clock), req, context=self.context)


def fetch(url: str, *, timeout: float = DEFAULT_TIMEOUT, deadline: float = DEFAULT_DEADLINE,
          max_bytes: int = DEFAULT_MAX_BYTES) -> Page:
    """Fetch ``url`` within the limits, or raise :class:`IngestError` with the reason: no single
    wait longer than ``timeout``, and the whole fetch (connecting, TLS, headers, redirects and
    body) within ``deadline`` seconds."""
    check_url(url)
    clock = _Clock(timeout, deadline)
    opener = urllib.request.build_opener(_Redirects(), _Handler(clock))
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT, "Accept": "text/html,text/plain;q=0.9,*/*;q=0.1"})
    try:
        resp = opener.open(request, timeout=min(timeout, deadline))
    except IngestError:
        raise
    except _DeadlinePassed as exc:
        raise IngestError(str(exc)) from None
    except urllib.error.HTTPError as exc:
        raise IngestError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (IngestError, _DeadlinePassed)):
            raise IngestError(str(reason)) from None
        if isinstance(reason, (socket.timeout, TimeoutError)) and clock.passed():  # e.g. a stalled TLS handshake
            raise IngestError(clock.message()) from None
        raise IngestError(f"cannot fetch: {_reason(reason)}") from None
    except (socket.timeout, TimeoutError):
        raise IngestError(clock.message() if clock.passed() else f"no answer within {timeout:g} s") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise IngestError(f"cannot fetch: {str(exc) or type(exc).__name__}") from None
    with resp:
        ctype_header = resp.headers.get("Content-Type", "")
        ctype = ctype_header.split(";")[0].strip().lower() or "text/html"
        if ctype not in _TYPES:
            raise IngestError(f"the page is {ctype}, not HTML or text")
        length = resp.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise IngestError(f"the page is {int(length):,} bytes; the limit is {max_bytes:,}")
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                clock.budget()  # also when what is read next is already buffered
                # read1 returns what one read brings, so the deadline is checked between reads
                part = resp.read1(65536)
            except _DeadlinePassed as exc:
                raise IngestError(str(exc)) from None
            except (socket.timeout, TimeoutError):
                raise IngestError(f"the server stalled for {timeout:g} s") from None
            except (OSError, ValueError, http.client.HTTPException) as exc:
                raise IngestError(f"the connection failed: {str(exc) or type(exc).__name__}") from None
            if not part:
                break
            total += len(part)
            if total > max_bytes:
                raise IngestError(f"the page is over the {max_bytes:,}-byte limit")
            chunks.append(part)
        m = re.search(r"charset=([\w.-]+)", ctype_header, re.IGNORECASE)
        return Page(url=url, final_url=resp.geturl(), content_type=ctype, charset=m.group(1) if m else None, data=b"".join(chunks))


def _reason(reason: Any) -> str:
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return "timed out"
    return getattr(reason, "strerror", None) or str(reason)


# ---------------------------------------------------------------- extraction

_DROP = {"script", "style", "nav", "header", "footer", "aside", "noscript", "svg", "form", "template", "iframe",
         "button", "select", "canvas", "object", "menu"}
_BLOCK = {"p", "div", "section", "li", "ul", "ol", "table", "tr", "blockquote", "dd", "dt", "dl", "figure",
          "figcaption", "br", "hr", "main", "article", "body", "td", "th"}
_VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Extractor(HTMLParser):
    """Collects the visible text of a page as Markdown-ish blocks, keeping main/article apart."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.h1 = ""
        self._in_title = False
        self._drop = 0
        self._main = 0
        self._pre = 0
        self._heading: int = 0
        self.all: list[str] = []
        self.main: list[str] = []
        self._buf: list[str] = []

    def _flush(self) -> None:
        text = "".join(self._buf)
        self._buf = []
        if self._pre:
            block = text.strip("\n")
        else:
            block = re.sub(r"\s+", " ", text).strip()
        if not block:
            return
        if self._heading:
            if self._heading == 1 and not self.h1:
                self.h1 = block
            block = "#" * self._heading + " " + block
        elif self._pre:
            block = "```\n" + block + "\n```"
        self.all.append(block)
        if self._main:
            self.main.append(block)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if self._drop:
            if tag in _DROP and tag not in _VOID:
                self._drop += 1
            return
        if tag in _DROP:
            self._flush()
            self._drop = 1
            return
        if tag in ("main", "article"):
            self._flush()
            self._main += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._heading = int(tag[1])
        elif tag == "pre":
            self._flush()
            self._pre += 1
        elif tag in _BLOCK:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._drop:
            if tag in _DROP:
                self._drop -= 1
            return
        if re.fullmatch(r"h[1-6]", tag) and self._heading:
            self._flush()
            self._heading = 0
        elif tag == "pre" and self._pre:
            self._flush()
            self._pre -= 1
        elif tag in ("main", "article") and self._main:
            self._flush()
            self._main -= 1
        elif tag in _BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._drop:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def extract(html: str) -> tuple[str, str]:
    """``(title, markdown_text)`` of an HTML page's main content."""
    parser = _Extractor()
    try:
        parser.feed(html)
        parser.close()
    except Exception as exc:  # HTMLParser is lenient; anything it still raises is bad input
        raise IngestError(f"cannot parse the page: {exc}") from None
    blocks = parser.main if sum(len(b) for b in parser.main) >= 80 else parser.all
    title = unescape(re.sub(r"\s+", " ", parser.title)).strip() or parser.h1
    return title, "\n\n".join(blocks)
