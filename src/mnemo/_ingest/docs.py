"""Reading documents from disk: which files to take, how to decode them, what time they carry.

Problems with one file (too big, binary, undecodable, unreadable, a symlink loop) become a
reason attached to that file; the ingest run reports it and goes on with the rest.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from ..errors import IngestError

#: default per-file size limit (configurable: ``ingest_max_bytes``)
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
#: file kinds by extension; in a folder only these are taken
KINDS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown",
    ".txt": "text", ".text": "text",
    ".json": "chat", ".jsonl": "chat",
    ".html": "html", ".htm": "html",
}
_DATE_IN_NAME = re.compile(r"(?<!\d)(20\d\d|19\d\d)[-_.]?(0[1-9]|1[0-2])[-_.]?(0[1-9]|[12]\d|3[01])(?!\d)")


@dataclass
class Document:
    """A file's decoded text and its bookkeeping."""

    path: Path
    text: str
    encoding: str
    size: int
    mtime: float
    content_hash: str
    kind: str


@dataclass
class Walk:
    """What a walk over the given paths found: files to ingest and what was skipped, and why."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)  # folders walked (for --sync)

    def skip(self, path: Path | str, reason: str) -> None:
        self.skipped.append({"path": str(path), "reason": reason})


# ---------------------------------------------------------------- choosing files

def _matches(rel: str, name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def walk(paths: Sequence[str | os.PathLike[str]], *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Walk:
    """The files under ``paths`` (recursively) to ingest. Hidden files and folders, files of
    other types, excluded ones and symlink loops are skipped with a reason; a file reached
    twice (through a link) is taken once. ``include``/``exclude`` are globs matched against
    the path relative to the folder given and against the file name."""
    out = Walk()
    seen_files: set[str] = set()
    for raw in paths:
        root = Path(os.path.expanduser(os.fspath(raw))).absolute()
        if not os.path.lexists(root):
            out.skip(root, "no such file or folder")
            continue
        if root.is_dir():
            out.roots.append(root)
            _walk_dir(root, root, out, include, exclude, seen_files, set())
        elif not root.exists():
            out.skip(root, "broken symlink")
        else:
            real = os.path.realpath(root)
            if real not in seen_files:
                seen_files.add(real)
                # a file named explicitly is taken whatever its extension (read as text)
                out.files.append((root, KINDS.get(root.suffix.lower(), "text")))
    return out


def _walk_dir(root: Path, folder: Path, out: Walk, include: Sequence[str], exclude: Sequence[str],
              seen_files: set[str], seen_dirs: set[str]) -> None:
    real = os.path.realpath(folder)
    if real in seen_dirs:
        out.skip(folder, "symlink loop (folder already visited)")
        return
    seen_dirs = seen_dirs | {real}  # the dirs on this branch: a link back up is a loop
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        out.skip(folder, f"cannot list folder: {exc.strerror or exc}")
        return
    for entry in entries:
        path = Path(entry.path)
        rel = path.relative_to(root).as_posix()
        if entry.name.startswith("."):
            out.skip(path, "hidden")
            continue
        if exclude and _matches(rel, entry.name, exclude):
            out.skip(path, "excluded")
            continue
        try:
            is_dir = entry.is_dir()  # follows links
        except OSError:
            is_dir = False
        if is_dir:
            _walk_dir(root, path, out, include, exclude, seen_files, seen_dirs)
            continue
        if entry.is_symlink() and not path.exists():
            out.skip(path, "broken symlink")
            continue
        kind = KINDS.get(path.suffix.lower())
        if kind is None:
            out.skip(path, "unsupported file type")
            continue
        if include and not _matches(rel, entry.name, include):
            out.skip(path, "not included")
            continue
        real_file = os.path.realpath(path)
        if real_file in seen_files:
            continue
        seen_files.add(real_file)
        out.files.append((path, kind))


# ---------------------------------------------------------------- reading

def _read_at_most(fh: Any, limit: int) -> bytes:
    """Up to ``limit`` bytes, in blocks: ``read(limit)`` would allocate ``limit`` bytes up front,
    which for a large ``ingest_max_bytes`` is a MemoryError on a small file."""
    blocks, total = [], 0
    while total < limit:
        block = fh.read(min(1 << 20, limit - total))
        if not block:
            break
        blocks.append(block)
        total += len(block)
    return b"".join(blocks)


def read_document(path: Path, kind: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Read and decode one file, or raise :class:`IngestError` saying why it cannot be."""
    try:
        st = path.stat()
    except OSError as exc:
        raise IngestError(f"cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise IngestError("not a regular file")
    if st.st_size > max_bytes:
        raise IngestError(f"{_mb(st.st_size)} is over the {_mb(max_bytes)} limit per file (setting ingest_max_bytes)")
    try:
        with open(path, "rb") as fh:
            data = _read_at_most(fh, max_bytes + 1)
    except OSError as exc:
        raise IngestError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # it grew while we looked
        raise IngestError(f"over the {_mb(max_bytes)} limit per file (setting ingest_max_bytes)")
    text, encoding = decode_bytes(data)
    return Document(path=path, text=text, encoding=encoding, size=len(data), mtime=st.st_mtime,
                    content_hash=hashlib.sha256(data).hexdigest(), kind=kind)


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def decode_bytes(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """Decode text: BOMs first, then a declared charset, strict UTF-8, GB18030 (GBK's superset)
    when the result reads as Chinese, then charset-normalizer's guess. Binary data and bytes no
    encoding explains raise :class:`IngestError`; nothing is decoded with replacement characters."""
    for bom, enc in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            try:
                return _checked(data.decode(enc), enc)
            except UnicodeDecodeError:
                raise IngestError(f"starts with a {enc} byte-order mark but is not valid {enc}") from None
    if b"\x00" in data[:8192]:
        raise IngestError("binary file (contains NUL bytes)")
    if declared:
        try:
            return _checked(data.decode(declared), declared.lower())
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return _checked(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("gb18030")
        if _reads_as_chinese(text):
            return _checked(text, "gb18030")
    except UnicodeDecodeError:
        pass
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        from_bytes = None
    if from_bytes is not None:
        best = from_bytes(data[:1_000_000]).best()
        if best is not None and best.encoding:
            try:
                return _checked(data.decode(best.encoding), best.encoding)
            except (LookupError, UnicodeDecodeError):
                pass
    raise IngestError("cannot tell its text encoding (not UTF-8, UTF-16 or GBK/GB18030)")


def _reads_as_chinese(text: str) -> bool:
    """Most non-ASCII characters are common CJK ideographs or CJK punctuation."""
    non_ascii = [c for c in text if ord(c) > 127]
    if not non_ascii:
        return True
    cjk = sum(1 for c in non_ascii if "\u4e00" <= c <= "\u9fff" or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef")
    return cjk >= 0.9 * len(non_ascii)


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")


def _checked(text: str, encoding: str) -> tuple[str, str]:
    sample = text[:100_000]
    if "\x00" in sample or len(_CONTROLS.findall(sample)) > max(8, len(sample) // 100):
        raise IngestError("binary file (control characters), not text")
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding


# ---------------------------------------------------------------- time and title

def document_time(meta: dict[str, Any], path: Path | None, mtime: float | None) -> tuple[datetime, str]:
    """A document's own time and where it came from: front matter ``date``/``created``, a date
    in the file name (``2024-05-01``, ``20240501``), else the file's modification time."""
    from .._base.models import parse_time
    from ..errors import InvalidInputError

    for key in ("date", "created", "created_at", "time"):
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            try:
                return parse_time(value.strip().replace(" ", "T", 1) if re.match(r"\d{4}-\d\d-\d\d \d", value.strip()) else value.strip()), "front matter"
            except InvalidInputError:
                pass
    if path is not None:
        m = _DATE_IN_NAME.search(path.name)
        if m:
            try:
                return parse_time(datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)))), "file name"
            except ValueError:
                pass
    return datetime.fromtimestamp(mtime or 0, timezone.utc), "modified time"
