"""Structure-aware chunking of documents for retrieval.

A Markdown document is cut along its own structure first: each heading opens a section, a
section's blocks (paragraphs, lists, code fences) are packed into chunks of about
``chunk_chars`` characters, a paragraph that is too long is cut at sentence boundaries
(Chinese ``。！？；`` and English ``. ! ?``), and only a sentence longer than a whole chunk
is cut inside. A code fence stays whole when it is at most twice the chunk size, so code is
never split where that can be avoided. Chunks never cross a heading.

Every chunk keeps its exact character span in the source text (``start``/``end``): the stored
memory is the original text, while the text embedded and indexed carries a prefix of the
document title and heading path (:func:`embed_prefix`, e.g. ``【性能优化笔记 › 索引】``), which
tells the model what a paragraph is about without changing what the user reads back.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

#: default chunk size in characters (configurable: ``chunk_chars``)
DEFAULT_CHUNK_CHARS = 512
#: a code block up to this multiple of the chunk size stays in one chunk
CODE_SLACK = 2.0

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
# a sentence ends after Chinese/English end punctuation (plus closing quotes/brackets); English
# punctuation only counts when whitespace follows, so "3.14" and "e.g.x" are not cut
_SENTENCE_END = re.compile(r"(?:[。！？；!?…]+[”’」』）)\]\"']*|[.!?;]+[”’)\]\"']*(?=\s))\s*")
_FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")


@dataclass
class Chunk:
    """One piece of a document: its original text and where it sits."""

    text: str
    start: int
    end: int
    headings: tuple[str, ...] = ()
    index: int = 0
    kind: str = "text"  # text · code
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- front matter

def parse_front_matter(text: str) -> tuple[dict[str, Any], int]:
    """``(metadata, body_offset)`` of a document starting with a ``---`` YAML front-matter block.

    Only the flat ``key: value`` subset notes use is read (title, date, tags: [a, b]); a
    nested or odd block is kept as far as it parses, never an error."""
    if not text.startswith("---"):
        return {}, 0
    first_nl = text.find("\n")
    if first_nl < 0 or text[:first_nl].strip() != "---":
        return {}, 0
    meta: dict[str, Any] = {}
    pos = first_nl + 1
    while pos < len(text):
        nl = text.find("\n", pos)
        line = text[pos: nl if nl >= 0 else len(text)]
        nxt = len(text) if nl < 0 else nl + 1
        if line.strip() in ("---", "..."):
            return meta, nxt
        m = _FRONT_KEY.match(line.rstrip())
        if m:
            meta[m.group(1).lower()] = _front_value(m.group(2))
        pos = nxt
    return {}, 0  # never closed: not front matter


def _front_value(raw: str) -> Any:
    v = raw.strip()
    if v.startswith("[") and v.endswith("]"):
        return [x.strip().strip("'\"") for x in v[1:-1].split(",") if x.strip()]
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v


# ---------------------------------------------------------------- blocks

@dataclass
class _Block:
    kind: str  # heading · code · para
    start: int
    end: int
    level: int = 0
    title: str = ""


def _lines(text: str, start: int) -> list[tuple[int, int, str]]:
    """``(start, end, line)`` of each line from ``start`` (``end`` excludes the newline)."""
    out = []
    pos = start
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        out.append((pos, end, text[pos:end]))
        pos = end + 1
    return out


def markdown_blocks(text: str, start: int = 0) -> list[_Block]:
    """Headings, fenced code blocks and paragraphs (runs of non-blank lines) with their spans."""
    blocks: list[_Block] = []
    para: list[int] = []  # [start, end] of the open paragraph
    fence: tuple[str, int, int] | None = None  # (char, length, start)

    def close_para() -> None:
        if para:
            blocks.append(_Block("para", para[0], para[1]))
            para.clear()

    last_end = start
    for ls, le, line in _lines(text, start):
        last_end = le
        if fence is not None:
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not line[m.end():].strip():
                blocks.append(_Block("code", fence[2], le))
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            close_para()
            fence = (m.group(1)[0], len(m.group(1)), ls)
            continue
        h = _ATX.match(line)
        if h:
            close_para()
            blocks.append(_Block("heading", ls, le, level=len(h.group(1)), title=(h.group(2) or "").strip()))
            continue
        if not line.strip():
            close_para()
            continue
        if para:
            para[1] = le
        else:
            para.extend([ls, le])
    if fence is not None:  # an unclosed fence runs to the end (CommonMark)
        blocks.append(_Block("code", fence[2], last_end))
    close_para()
    return blocks


def text_blocks(text: str, start: int = 0) -> list[_Block]:
    """Plain text: paragraphs separated by blank lines."""
    blocks: list[_Block] = []
    for m in re.finditer(r"\S(?:.|\n(?![ \t]*\n))*", text[start:]):
        blocks.append(_Block("para", start + m.start(), start + m.end()))
    return blocks


# ---------------------------------------------------------------- splitting

def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans inside ``text[start:end]`` (Chinese and English boundaries)."""
    spans = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.end() > pos:
            spans.append((pos, m.end()))
            pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return spans


def _hard_split(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Cut a span with no usable boundary near ``size``, preferring whitespace or a comma."""
    out = []
    pos = start
    while end - pos > size:
        cut = pos + size
        window = text[pos + size // 2: cut]
        best = max(window.rfind(c) for c in (" ", "\n", "，", ",", "、", "\t"))
        if best >= 0:
            cut = pos + size // 2 + best + 1
        out.append((pos, cut))
        pos = cut
    if pos < end:
        out.append((pos, end))
    return out


def _pieces(text: str, block: _Block, size: int) -> list[tuple[int, int, str]]:
    """A block as packable pieces ``(start, end, kind)``, each at most ``size`` unless it is a
    code block short enough to keep whole."""
    length = block.end - block.start
    if block.kind == "code":
        if length <= size * CODE_SLACK:
            return [(block.start, block.end, "code")]
        # a very long listing is cut between lines, never inside one
        out: list[tuple[int, int, str]] = []
        for ls, le in _line_groups(text, block.start, block.end, size):
            out.append((ls, le, "code"))
        return out
    if length <= size:
        return [(block.start, block.end, "text")]
    out = []
    for ss, se in sentence_spans(text, block.start, block.end):
        if se - ss <= size:
            out.append((ss, se, "text"))
        else:
            out.extend((a, b, "text") for a, b in _hard_split(text, ss, se, size))
    return out


def _line_groups(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    groups: list[tuple[int, int]] = []
    cur: list[int] = []
    for ls, le, _ in _lines(text[:end], start):
        if cur and le - cur[0] > size:
            groups.append((cur[0], cur[1]))
            cur = []
        if le - ls > size:
            groups.extend(_hard_split(text, ls, le, size))
            continue
        cur = [cur[0] if cur else ls, le]
    if cur:
        groups.append((cur[0], cur[1]))
    return groups


# ---------------------------------------------------------------- chunking

def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _pack(text: str, pieces: list[tuple[int, int, str]], size: int, headings: tuple[str, ...], out: list[Chunk]) -> None:
    cur: list[Any] = []  # [start, end, kind]

    def flush() -> None:
        if cur:
            s, e = _strip_span(text, cur[0], cur[1])
            if e > s:
                out.append(Chunk(text[s:e], s, e, headings, len(out), cur[2]))
            cur.clear()

    for ps, pe, kind in pieces:
        if cur and pe - cur[0] > size:
            flush()
        if not cur:
            cur.extend([ps, pe, kind])
        else:
            cur[1] = pe
            if kind == "code":
                cur[2] = "code"
        if pe - ps > size:  # an oversized piece (a kept-whole code block) stands alone
            flush()
    flush()


def chunk_markdown(text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS, start: int = 0) -> list[Chunk]:
    """Chunks of a Markdown document (from ``start``, e.g. after the front matter), each with
    the heading path it sits under."""
    size = check_chunk_chars(chunk_chars)
    out: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    pieces: list[tuple[int, int, str]] = []
    for block in markdown_blocks(text, start):
        if block.kind == "heading":
            _pack(text, pieces, size, tuple(t for _, t in stack), out)
            pieces = []
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            if block.title:
                stack.append((block.level, block.title))
            continue
        pieces.extend(_pieces(text, block, size))
    _pack(text, pieces, size, tuple(t for _, t in stack), out)
    return out


def chunk_text(text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS, start: int = 0) -> list[Chunk]:
    """Chunks of plain text: paragraphs packed, long ones cut at sentences."""
    size = check_chunk_chars(chunk_chars)
    out: list[Chunk] = []
    pieces: list[tuple[int, int, str]] = []
    for block in text_blocks(text, start):
        pieces.extend(_pieces(text, block, size))
    _pack(text, pieces, size, (), out)
    return out


def fixed_windows(text: str, size: int = DEFAULT_CHUNK_CHARS) -> list[Chunk]:
    """The baseline the benchmark compares with: consecutive ``size``-character windows."""
    size = check_chunk_chars(size)
    out = []
    for i in range(0, len(text), size):
        s, e = _strip_span(text, i, min(len(text), i + size))
        if e > s:
            out.append(Chunk(text[s:e], s, e, (), len(out)))
    return out


def check_chunk_chars(chunk_chars: int) -> int:
    """A usable chunk size (64..8000 characters), or :class:`InvalidInputError`."""
    from ..errors import InvalidInputError

    try:
        size = int(chunk_chars)
    except (TypeError, ValueError):
        raise InvalidInputError(f"chunk size {chunk_chars!r} is not a number") from None
    if not 64 <= size <= 8000:
        raise InvalidInputError(f"chunk size must be between 64 and 8000 characters, not {size}")
    return size


def embed_prefix(title: str | None, headings: tuple[str, ...] | list[str]) -> str:
    """``【title › heading › subheading】``: what a chunk is embedded and indexed under. A first
    heading that repeats the title is not repeated."""
    parts = [p.strip() for p in ([title] if title else []) + list(headings) if p and p.strip()]
    if len(parts) >= 2 and parts[0] == parts[1]:
        parts.pop(1)
    return "【" + " › ".join(parts) + "】" if parts else ""


def first_heading(text: str, start: int = 0) -> str | None:
    """The first level-1 heading of a Markdown document (its usual title), if any."""
    for block in markdown_blocks(text[: start + 20000], start):
        if block.kind == "heading" and block.level == 1 and block.title:
            return block.title
    return None


# ---------------------------------------------------------------- two versions of one document

def edit_similarity(new: Collection[str], old: Collection[str]) -> float:
    """How likely a new document is an edited version of an old one, from the hashes of their
    chunks' text (``0.0``: not the same document; otherwise the Jaccard index, to rank
    candidates).

    A chunk is a paragraph-sized unit and its hash is exact, so a shared hash is a paragraph
    carried over unchanged, never a coincidence of wording; a light edit changes the few chunks
    it touches and leaves the rest. The rule asks that at least half the chunks of *each*
    version be found in the other: half of the new one, so that a new document which merely
    quotes a paragraph or shares a template's boilerplate does not take over an old one; half of
    the old one, so that a large new document does not swallow a small note it absorbed. Hence
    a three-paragraph note with one paragraph edited matches (2 of 3 both ways), while a body
    rewritten throughout does not. A one-chunk document edited shares nothing: telling its edit
    from a different note would need a text comparison, and it is treated as new, as before."""
    new_set, old_set = set(new), set(old)
    shared = len(new_set & old_set)
    if not shared or 2 * shared < max(len(new_set), len(old_set)):
        return 0.0
    return shared / len(new_set | old_set)
