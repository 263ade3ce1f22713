"""The memory record, search hits, and the validation and time helpers they share."""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import InvalidInputError

#: the built-in memory types (DESIGN.md); unknown types are rejected with this list
MEMORY_TYPES: tuple[str, ...] = (
    "user_preference",
    "project_context",
    "decision",
    "constraint",
    "goal",
    "feedback",
    "fact",
    "entity",
    "workflow",
    "note",
)
STATUSES: tuple[str, ...] = ("active", "superseded", "archived", "deleted")
GLOBAL_SCOPE = "global"
#: a memory is one statement; documents are chunked before they become memories
MAX_CONTENT_CHARS = 32_000
MAX_TAGS = 64
MAX_TAG_CHARS = 64
#: the calendar mnemo accepts: a date near year 1 or 9999 cannot move between time zones
MIN_YEAR, MAX_YEAR = 1000, 9998
#: the longest duration (an expiry, a window): a century
MAX_DURATION = timedelta(days=36_500)
#: how deep metadata may nest (deeper JSON is an attack on the parser, not a note)
MAX_DEPTH = 32


@dataclass
class Memory:
    """One remembered statement and its bookkeeping (see DESIGN.md, "The memory record")."""

    id: str
    content: str
    type: str = "note"
    scope: str = GLOBAL_SCOPE
    tags: list[str] = field(default_factory=list)
    importance: float = 0.5
    confidence: float = 1.0
    source: str = "manual"
    source_session: str | None = None
    created_at: str = ""
    updated_at: str = ""
    last_accessed_at: str | None = None
    access_count: int = 0
    status: str = "active"
    superseded_by: str | None = None
    expires_at: str | None = None
    content_hash: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    stored_at: str | None = None  # when it entered this store (created_at may be a document's own date)
    pinned: bool = False  # exempt from decay and archiving

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)


@dataclass
class Hit:
    """A recalled memory with its final ``score`` and, when asked, how it was computed."""

    memory: Memory
    score: float
    similarity: float | None
    explain: dict[str, Any] | None = None
    via: str | None = None  # set when the hit was added by --expand: the id of the hit it is linked to
    link: dict[str, Any] | None = None  # …and how: {"kind": "related", "strength": the cosine when it was linked}

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready dict: the memory's fields plus ``score``/``similarity``/``explain``."""
        out = self.memory.to_dict()
        out["score"] = round(self.score, 6)
        out["similarity"] = None if self.similarity is None else round(self.similarity, 6)
        if self.explain is not None:
            out["explain"] = self.explain
        if self.via is not None:
            out["via"] = self.via
            out["link"] = self.link
        return out


# ---------------------------------------------------------------- time

def utcnow() -> datetime:
    """The current time, aware, in UTC, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def parse_time(value: str | datetime, *, field_name: str = "time") -> datetime:
    """Read an ISO-8601 time (or a datetime); naive times are local time. Returns aware UTC."""
    if isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        if not text:
            raise InvalidInputError(f"{field_name} is empty")
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"{field_name} {value!r} is not an ISO-8601 time (e.g. 2024-05-08 or 2024-05-08T13:56:00)"
            ) from None
    if not MIN_YEAR <= dt.year <= MAX_YEAR:  # near year 1 or 9999, a time zone shift leaves the calendar
        raise InvalidInputError(f"{field_name} {value!s:.40} is outside the years {MIN_YEAR}–{MAX_YEAR}")
    if dt.tzinfo is None:
        dt = dt.astimezone()  # naive input is the user's local time
    return dt.astimezone(timezone.utc)


def format_time(dt: datetime) -> str:
    """The one stored time format: UTC, seconds, ``Z`` (sorts as text)."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``2w``, ``90m`` (minutes) → timedelta."""
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    t = text.strip().lower()
    if len(t) >= 2 and t[-1] in units and t[:-1].isascii() and t[:-1].isdigit():
        span = timedelta(**{units[t[-1]]: min(int(t[:-1]), 10**8)})
        if span > MAX_DURATION:
            raise InvalidInputError(f"duration {text!r} is longer than {MAX_DURATION.days // 365} years")
        return span
    raise InvalidInputError(f"duration {text!r} is not like 30d, 12h, 2w or 90m")


# ---------------------------------------------------------------- ids

def new_id(created: datetime) -> str:
    """``mem_<8 hex>_<yyyymmdd>_<hhmmss>``: unique, and readable about when it was made."""
    return f"mem_{secrets.token_hex(4)}_{created.astimezone(timezone.utc):%Y%m%d_%H%M%S}"


# ---------------------------------------------------------------- validation

def check_content(content: Any) -> str:
    """Return the content stripped, or raise a clear error for empty, huge or binary input."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError("content is not valid UTF-8 text") from None
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be text, not {type(content).__name__}")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: undecodable bytes from argv or a file
        raise InvalidInputError("content is not valid UTF-8 text") from None
    text = content.strip()
    if not text:
        raise InvalidInputError("content is empty")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"content is {len(text):,} characters; one memory holds at most {MAX_CONTENT_CHARS:,} "
            "(save a short statement, or split the document into several memories)"
        )
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t")
    if "\x00" in text or controls > max(2, len(text) // 100):
        raise InvalidInputError("content looks like binary data, not text")
    return text


def load_json(text: str) -> Any:
    """``json.loads``, with input nested too deeply for the parser reported as malformed JSON
    (a ``JSONDecodeError``, which every reader of a file already handles) instead of a
    ``RecursionError`` that would abort a whole import or a whole folder's ingest."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text[:100], 0) from None


def check_text(value: Any, name: str, *, max_chars: int = 10_000) -> str:
    """A string that is text: UTF-8 encodable (undecodable bytes from argv or a file arrive as
    lone surrogates) and not huge. Returned unchanged."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{name} is not valid UTF-8 text") from None
    if len(value) > max_chars:
        raise InvalidInputError(f"{name} is {len(value):,} characters; at most {max_chars:,}")
    return value


def check_count(value: Any, name: str, *, maximum: int = 1_000_000_000) -> int:
    """A whole number from 0 to ``maximum`` (a limit, an offset)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            if isinstance(value, bool) or float(value) != int(value):
                raise ValueError
            value = int(value)
        except (TypeError, ValueError, OverflowError):
            raise InvalidInputError(f"{name} must be a whole number, not {value!r:.40}") from None
    if not 0 <= value <= maximum:
        raise InvalidInputError(f"{name} must be between 0 and {maximum:,}, not {value:,}"[:200])
    return value


def check_number(value: Any, name: str, *, minimum: float = 0.0, maximum: float = 1e9) -> float:
    """A finite number in ``minimum..maximum`` (days, seconds, thresholds)."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(f"{name} must be a number, not {value!r:.40}") from None
    if not math.isfinite(x) or not minimum <= x <= maximum:
        raise InvalidInputError(f"{name} must be between {minimum:g} and {maximum:g}, not {value!r:.40}")
    return x


def check_type(value: str | None) -> str:
    """A known memory type (case-insensitive), or a clear error listing them."""
    t = (value or "note").strip().lower().replace("-", "_")
    if t not in MEMORY_TYPES:
        raise InvalidInputError(f"unknown type {value!r}; choose one of: {', '.join(MEMORY_TYPES)}")
    return t


def check_unit(value: Any, name: str) -> float:
    """A number in 0..1 (importance, confidence)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a number between 0 and 1, not {value!r}") from None
    if math.isnan(x) or not 0.0 <= x <= 1.0:
        raise InvalidInputError(f"{name} must be between 0 and 1, not {value!r}")
    return x


def check_scope(value: str | None, default: str = GLOBAL_SCOPE) -> str:
    """A scope name: any non-empty name without control characters; ``all`` is reserved for queries."""
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"scope must be text, not {type(value).__name__}")
    s = check_text(value if value is not None else default, "scope").strip()
    if not s or len(s) > 200 or any(ord(ch) < 32 for ch in s):
        raise InvalidInputError(f"scope {value!r} is not a usable name")
    if s == "all":
        raise InvalidInputError("'all' is reserved for searching every scope; save into a named scope")
    return s


def check_tags(value: Any) -> list[str]:
    """Tags from a list or a comma-separated string: stripped, deduplicated, order kept."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple, set)):
        items = list(value)
    else:
        raise InvalidInputError(f"tags must be a list of strings, not {type(value).__name__}")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidInputError(f"tag {item!r:.40} is not a string")
        tag = check_text(item, "a tag").strip()
        if not tag:
            continue
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(f"tag {tag[:20]!r}… is longer than {MAX_TAG_CHARS} characters")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} tags per memory")
    return out


def check_metadata(value: Any) -> dict[str, Any]:
    """Free JSON metadata: a dict that serialises."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError("metadata must be a JSON object")
    if _depth(value) > MAX_DEPTH:
        raise InvalidInputError(f"metadata nests deeper than {MAX_DEPTH} levels")
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise InvalidInputError(f"metadata is not JSON-serialisable text: {str(exc)[:100]}") from None
    return value


def _depth(value: Any, limit: int = MAX_DEPTH + 1) -> int:
    """How deep ``value`` nests (counted up to ``limit``, without recursion: it may be deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level >= limit:
            return level
        if isinstance(item, dict):
            stack += [(v, level + 1) for v in item.values()]
        elif isinstance(item, (list, tuple)):
            stack += [(v, level + 1) for v in item]
    return deepest


def embed_text(mem: Memory) -> str:
    """The text a memory is embedded and full-text indexed as: its content, after the
    ``embed_prefix`` its metadata may carry (an ingested chunk's title and heading path)."""
    prefix = mem.metadata.get("embed_prefix")
    return prefix + mem.content if isinstance(prefix, str) else mem.content


def check_vectors_mode(vectors: Any, *, dedup: bool = False) -> bool:
    """``vectors`` of a bulk write checked: True when the vectors are left for later."""
    if vectors not in ("now", "later"):
        raise InvalidInputError(f"vectors must be 'now' or 'later', not {vectors!r}")
    if vectors == "later" and dedup:
        raise InvalidInputError("the write rules (--dedup) compare each record's vector with the store: its vectors cannot wait")
    return vectors == "later"
