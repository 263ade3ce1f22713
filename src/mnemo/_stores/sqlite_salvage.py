"""Rescuing what SQLite can still read from a damaged store file (``mnemo doctor --salvage``).

SQLite's own recovery (the ``sqlite3_recover`` API behind the shell's ``.recover``, which reads
raw pages through the ``sqlite_dbpage`` table) is not built into ``apsw-sqlite3mc``: neither the
module nor the shell it ships has it. So this reads what SQLite still answers: every table is
scanned in rowid order, and where a page cannot be read (a torn write, a truncated file, flipped
bits that SQLite notices) the scan jumps over the rowids behind it — found by probing further and
further ahead, then halving the gap back — and goes on from the first rowid it can read again.
What SQLite cannot reach at all (the schema on page 1 is destroyed, an interior page hides the
leaves below it) is then looked for on the leaf pages themselves, for a plaintext file (below).
Rows on intact pages are saved; rows whose text no longer matches their hash are left out and
named, as are the rows an intact index still lists but no page gives back.

The damaged file is never opened: a private copy of it (and of its write-ahead log) is read, so
nothing — not a checkpoint, not a rollback of a hot journal — can change the original. An
encrypted store is read with its key; without the key no page can be decrypted, so nothing can be
saved. The new store gets the same key; its full-text rows are written here and its vectors are
rebuilt by the caller (``reindex``), since vectors are derived data that flipped bits would make
silently wrong.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import apsw

from .._base import text as _text
from .._base.models import STATUSES, Memory, check_scope, check_type, check_unit, embed_text, parse_time
from ..errors import InvalidInputError, MnemoError, SchemaTooNewError, StoreError, StoreKeyError
from .rows import MEMORY_FIELDS, SOURCE_COLUMNS, source_row
from .sqlite_file import SQLITE_HEADER, _connect
from .sqlite_schema import LATEST_VERSION

#: the largest rowid SQLite hands out (2**63 - 1): the probes ahead never go past it
_MAX_ROWID = 2 ** 63 - 1
#: what a scan skips: errors SQLite raises on a damaged page, and text that is not UTF-8 any more
_UNREADABLE = (apsw.Error, UnicodeDecodeError, ValueError, OverflowError)
_LINK_KINDS = ("related", "supersedes", "derived_from", "cause_effect")


def salvage(damaged: str | os.PathLike[str], output: str | os.PathLike[str], *, key: str | None = None) -> dict[str, Any]:
    """Copy every memory (with its history and links) and ingested source that can still be read
    from the SQLite store ``damaged`` into a new store at ``output`` (which must not exist),
    encrypted with ``key`` when the damaged one is. The damaged file is left as it was. Returns
    ``{"memories_saved", "memories_known", "lost_ids", "damaged_ids", "events", "relations",
    "sources", "skipped_ranges", "missing_tables", "memories_from_pages", "path"}``:
    ``memories_known`` is how many the store held as far as an index still tells (None when
    nothing does). Raises :class:`StoreKeyError` when the
    file is encrypted and no key (or a wrong one) is given, :class:`StoreError` when neither
    SQLite nor the pages themselves give back anything."""
    src, out = Path(damaged).expanduser(), Path(output).expanduser()
    if not src.is_file():
        raise StoreError(f"no store file at {src} to salvage")
    if out.exists():
        raise InvalidInputError(f"{out} already exists: salvage writes a new store, give a path that does not exist yet")
    if out.resolve() == src.resolve():
        raise InvalidInputError("salvage never writes over the damaged store: give another path")
    try:
        out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StoreError(f"cannot create the folder {out.parent}: {exc.strerror}") from None
    # the private copy sits beside the new store: same disk, and a folder only this user can read
    with tempfile.TemporaryDirectory(prefix=".mnemo-salvage-", dir=str(out.parent.resolve())) as work:
        copy = Path(work) / "damaged.db"
        shutil.copyfile(src, copy)
        wal = Path(f"{src}-wal")
        if wal.is_file():
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        found: dict[str, Any] | None = None
        try:
            conn = _open_copy(src, copy, key)
        except StoreError as exc:
            if key is not None or isinstance(exc, SchemaTooNewError):
                raise
            failure: StoreError | None = exc  # the schema is gone: the pages may still hold the rows
        else:
            failure = None
            try:
                found = _read_all(conn)
            finally:
                conn.close()
        if key is None and copy.stat().st_size:  # only a plaintext file can be read byte by byte
            with copy.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                found = _fill_from_pages(found, read_pages(data))
        if found is None:
            assert failure is not None
            raise failure
    return _write(out, key, found)


def _open_copy(src: Path, copy: Path, key: str | None) -> apsw.Connection:
    """The copy opened with ``key``, its schema readable; else the error that says why not."""
    with copy.open("rb") as fh:
        head = fh.read(16)
    if key is None and head != SQLITE_HEADER:
        if len(head) == 16:
            raise StoreKeyError(f"{src} is encrypted, or not an SQLite database at all: an encrypted store can only be "
                                "salvaged with its key (set MNEMO_KEY or keep its key file in the mnemo home); without "
                                "the key nothing in it can be read")
        raise StoreError(f"{src} is not an SQLite database (only {len(head)} bytes): there is nothing to salvage")
    try:
        conn = _connect(copy, key, apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error as exc:
        raise StoreError(f"cannot open the copy of {src}: {exc}") from None
    try:
        conn.execute("PRAGMA cell_size_check=ON")  # notice more damaged cells instead of reading garbage
        # a schema naming a root page past the end of a truncated file is "malformed" as a whole;
        # with writable_schema SQLite still loads it, and only that table's reads fail
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("PRAGMA query_only=ON")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except apsw.NotADBError:
        conn.close()
        if key is not None:
            raise StoreKeyError(f"cannot read {src} with this key: the key is wrong, or the first page is damaged "
                                "(an encrypted page that is damaged cannot be decrypted, and without the first page "
                                "nothing can be found); try a backup") from None
        raise StoreError(f"{src} is not an SQLite database, or its first page is destroyed: nothing can be salvaged "
                         "(restore a backup or a full export)") from None
    except apsw.Error as exc:
        conn.close()
        raise StoreError(f"the schema of {src} cannot be read ({exc}): nothing can be salvaged (restore a backup "
                         "or a full export)") from None
    if version > LATEST_VERSION:
        conn.close()
        raise SchemaTooNewError(f"{src} has schema version {version}, newer than this mnemo understands ({LATEST_VERSION}); "
                                "upgrade mnemo and salvage it again")
    return conn


# ---------------------------------------------------------------- reading around damage


def _probe(conn: apsw.Connection, table: str, columns: str, at: int) -> bool:
    """Whether the first row at or after rowid ``at`` (or the end of the table) can be read."""
    try:
        conn.execute(f"SELECT rowid, {columns} FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT 1", (at,)).fetchall()
        return True
    except _UNREADABLE:
        return False


def _next_readable(conn: apsw.Connection, table: str, columns: str, bad: int) -> int | None:
    """The first rowid after ``bad`` from which the table reads again, or None when no later rowid
    does. Probes 1, 2, 4… rowids ahead (a damaged page hides a run of rowids), then halves the gap
    between the last unreadable probe and the first readable one."""
    step, fail = 1, bad
    while True:
        at = bad + step
        if at > _MAX_ROWID:
            return None
        if _probe(conn, table, columns, at):
            break
        fail, step = at, step * 2
    ok = at
    while ok - fail > 1:
        mid = (fail + ok) // 2
        if _probe(conn, table, columns, mid):
            ok = mid
        else:
            fail = mid
    return ok


def scan_table(conn: apsw.Connection, table: str, columns: list[str]) -> tuple[dict[int, tuple[Any, ...]], list[tuple[int, int | None]]]:
    """Every readable row of ``table`` as ``{rowid: values of columns}``, and the rowid ranges
    skipped as unreadable (``(first, last)``, ``last`` None: to the end)."""
    cols = ", ".join(columns)
    rows: dict[int, tuple[Any, ...]] = {}
    skipped: list[tuple[int, int | None]] = []
    at = 0  # SQLite numbers rows from 1; only an explicit insert makes a negative rowid, and mnemo makes none
    while True:
        try:
            for row in conn.execute(f"SELECT rowid, {cols} FROM {table} WHERE rowid >= ? ORDER BY rowid", (at,)):
                rows.setdefault(row[0], tuple(row[1:]))
                at = row[0] + 1
            return rows, skipped
        except _UNREADABLE:
            nxt = _next_readable(conn, table, cols, at)
            skipped.append((at, None if nxt is None else nxt - 1))
            if nxt is None:
                return rows, skipped
            at = nxt


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    """The columns ``table`` has in this file (an older schema has fewer), or [] when it is gone."""
    try:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    except apsw.Error:
        return []


def _known_ids(conn: apsw.Connection) -> list[str] | None:
    """The memory ids the unique index on ``id`` lists (it may be intact where the table is not),
    or None when it cannot be read."""
    try:
        return [r[0] for r in conn.execute("SELECT id FROM memories INDEXED BY sqlite_autoindex_memories_1 ORDER BY id")]
    except _UNREADABLE:
        return None


def _read_all(conn: apsw.Connection) -> dict[str, Any]:
    """What can be read of the tables that hold the truth: memories, events, relations, sources."""
    found: dict[str, Any] = {"skipped": {}, "missing": [], "known_ids": _known_ids(conn)}
    for table, wanted in (("memories", MEMORY_FIELDS), ("events", ("memory_id", "kind", "at", "cause", "data")),
                          ("relations", ("src", "dst", "kind", "strength", "created_at")), ("sources", SOURCE_COLUMNS)):
        present = _columns(conn, table)
        cols = [c for c in wanted if c in present]
        if not cols:  # the schema no longer names it (or an old schema never had it)
            found[table] = {}
            found["missing"].append(table)
            continue
        rows, skipped = scan_table(conn, table, cols)
        # an older schema lacks some columns (stored_at, pinned): they read as None, then defaults
        found[table] = {rowid: dict(zip(cols, values)) for rowid, values in rows.items()}
        found["skipped"][table] = skipped
    return found


# ---------------------------------------------------------------- reading the pages themselves
# Where SQLite cannot reach a row — the schema on page 1 is destroyed, or a damaged interior page
# hides all the leaves below it — the row is often still intact on its leaf page. For a plaintext
# file the pages are read here directly (the file format: sqlite.org/fileformat2.html), and each
# table leaf's records are matched to mnemo's tables by their number of columns: 23 (or 21 before
# migration 2) is a memory, 6 an event; no other table of the schema has those counts (a link,
# 5, is told from the other 5-column rows by its kind and strength). A memory found this way is
# kept only when its text matches its hash (``_memory``), so a record that only looks like one is
# never saved. An encrypted file's pages cannot be read without SQLite. Only the main file is
# read here (after SQLite, when it could open the copy, wrote the write-ahead log into it).

#: the memories table's columns in the order of its CREATE TABLE (+ migration 2's two)
_MEMORY_TABLE = ("pk", "id", "content", "type", "scope", "tags", "importance", "confidence", "source", "source_session",
                 "created_at", "updated_at", "last_accessed_at", "access_count", "status", "superseded_by", "expires_at",
                 "content_hash", "embed_hash", "metadata", "seq", "stored_at", "pinned")
_EVENT_TABLE = ("pk", "memory_id", "kind", "at", "cause", "data")
_RELATION_TABLE = ("src", "dst", "kind", "strength", "created_at")


def _varint(buf: bytes | mmap.mmap, at: int) -> tuple[int, int]:
    """SQLite's variable-length integer at ``at``: ``(value, offset after it)``."""
    value = 0
    for i in range(8):
        byte = buf[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | buf[at + 8], at + 9


def _record(payload: bytes) -> list[Any]:
    """The values of one record (``ValueError``/``IndexError`` when it is not one)."""
    size, at = _varint(payload, 0)
    if not 0 < size <= len(payload):
        raise ValueError("bad record header")
    types = []
    while at < size:
        t, at = _varint(payload, at)
        types.append(t)
    values: list[Any] = []
    at = size
    for t in types:
        if t == 0:
            values.append(None)
        elif 1 <= t <= 6:
            n = (1, 2, 3, 4, 6, 8)[t - 1]
            values.append(int.from_bytes(payload[at:at + n], "big", signed=True))
            at += n
        elif t == 7:
            values.append(struct.unpack(">d", payload[at:at + 8])[0])
            at += 8
        elif t in (8, 9):
            values.append(t - 8)
        elif t >= 12:
            n = (t - 12) // 2
            chunk = payload[at:at + n]
            values.append(chunk.decode("utf-8") if t % 2 else bytes(chunk))
            at += n
        else:
            raise ValueError("reserved serial type")
        if at > len(payload):
            raise ValueError("record runs past its payload")
    return values


def read_pages(data: bytes | mmap.mmap) -> dict[str, dict[int, dict[str, Any]]]:
    """The memory, event and link rows on the table leaf pages of the plaintext SQLite file
    ``data``, by rowid (where a rowid is on two pages, the memory with the higher ``seq`` wins: the
    other is an older copy)."""
    found: dict[str, dict[int, dict[str, Any]]] = {"memories": {}, "events": {}, "relations": {}}
    if len(data) < 512:
        return found
    size = int.from_bytes(data[16:18], "big")
    size = 65536 if size == 1 else size
    if size < 512 or size & (size - 1) or data[:16] != SQLITE_HEADER:
        size = 4096  # the header is damaged: mnemo's stores use SQLite's default page size
    usable = size - (data[20] if data[:16] == SQLITE_HEADER else 0)
    pages = len(data) // size
    for number in range(1, pages + 1):
        base = (number - 1) * size
        head = base + (100 if number == 1 else 0)
        if data[head] != 0x0D:  # a table b-tree leaf
            continue
        cells = int.from_bytes(data[head + 3:head + 5], "big")
        for i in range(min(cells, size // 4)):
            try:
                ptr = int.from_bytes(data[head + 8 + 2 * i:head + 10 + 2 * i], "big")
                rowid, row = _cell(data, base, ptr, size, usable, pages)
            except (ValueError, IndexError, UnicodeDecodeError):
                continue
            if len(row) == len(_RELATION_TABLE):  # no rowid alias; a known kind and a number tell it from the rest
                if isinstance(row[0], str) and isinstance(row[1], str) and row[2] in _LINK_KINDS and isinstance(row[3], (int, float)):
                    found["relations"][rowid] = dict(zip(_RELATION_TABLE, row))
                continue
            table = {len(_MEMORY_TABLE): "memories", len(_MEMORY_TABLE) - 2: "memories", len(_EVENT_TABLE): "events"}.get(len(row))
            if table is None or row[0] is not None:  # the rowid alias is stored as NULL
                continue
            names = _MEMORY_TABLE if table == "memories" else _EVENT_TABLE
            rec = dict(zip(names, row))
            have = found[table].get(rowid)
            if have is None or (table == "memories" and (rec.get("seq") or 0) > (have.get("seq") or 0)):
                found[table][rowid] = rec
    return found


def _cell(data: bytes | mmap.mmap, base: int, ptr: int, size: int, usable: int, pages: int) -> tuple[int, list[Any]]:
    """The rowid and values of the table-leaf cell at ``ptr`` of the page at ``base``, following
    its overflow pages."""
    if not 8 <= ptr < size:
        raise ValueError("cell pointer off the page")
    length, at = _varint(data, base + ptr)
    rowid, at = _varint(data, at)
    if rowid >= 2 ** 63:
        rowid -= 2 ** 64
    most = usable - 35
    if length <= most:
        local = length
    else:  # the file format's rule for how much of a long payload stays on the leaf
        least = (usable - 12) * 32 // 255 - 23
        local = least + (length - least) % (usable - 4)
        local = local if local <= most else least
    if at + local > base + size:
        raise ValueError("cell runs off the page")
    payload = bytearray(data[at:at + local])
    if local < length:
        next_page = int.from_bytes(data[at + local:at + local + 4], "big")
        seen = set()
        while len(payload) < length:
            if not 1 < next_page <= pages or next_page in seen:
                raise ValueError("broken overflow chain")
            seen.add(next_page)
            o = (next_page - 1) * size
            next_page = int.from_bytes(data[o:o + 4], "big")
            payload += data[o + 4:o + 4 + min(usable - 4, length - len(payload))]
    return rowid, _record(bytes(payload))


def _fill_from_pages(found: dict[str, Any] | None, pages: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any] | None:
    """``found`` (what SQLite read; None when it could read nothing) with the memories and events
    that only the pages still hold: rows in the rowid ranges SQLite had to skip, or every row of a
    table it could not read at all. None when there is nothing at all."""
    if found is None:
        if not pages["memories"]:
            return None
        found = {"skipped": {}, "missing": ["memories", "events", "relations", "sources"], "known_ids": None,
                 "memories": {}, "events": {}, "relations": {}, "sources": {}}
    found["from_pages"] = 0
    for table in ("memories", "events", "relations"):
        unread = table in found["missing"]
        ranges = found["skipped"].get(table, [])
        for rowid, row in pages[table].items():
            if rowid in found[table]:
                continue
            if not unread and not any(lo <= rowid and (hi is None or rowid <= hi) for lo, hi in ranges):
                continue  # SQLite read past this rowid and found no such row: a leftover, not a row
            if table == "memories":
                try:
                    _memory(row)
                except (MnemoError, ValueError, TypeError, KeyError, json.JSONDecodeError):
                    continue
                found["from_pages"] += 1
            found[table][rowid] = row
        if unread and found[table]:
            found["missing"].remove(table)
    return found


# ---------------------------------------------------------------- writing the new store


def _memory(row: dict[str, Any]) -> Memory:
    """A salvaged row as a memory, checked as a write would check it: a value that flipped bits
    made impossible raises, so the row is left out rather than stored wrong."""
    fields = {f: row.get(f) for f in MEMORY_FIELDS}
    fields["tags"] = json.loads(fields["tags"] or "[]")
    fields["metadata"] = json.loads(fields["metadata"] or "{}")
    fields["pinned"] = bool(fields["pinned"])
    fields["access_count"] = int(fields["access_count"] or 0)
    # a REAL that is a whole number is stored as an integer on the page (SQLite's record format)
    fields["importance"], fields["confidence"] = float(fields["importance"]), float(fields["confidence"])
    mem = Memory(**fields)
    if not isinstance(mem.content, str) or not mem.content or _text.content_hash(mem.content) != mem.content_hash:
        raise ValueError("the text does not match its hash")
    if mem.status not in STATUSES or not isinstance(mem.tags, list) or not isinstance(mem.metadata, dict):
        raise ValueError("impossible values")
    check_type(mem.type), check_scope(mem.scope), check_unit(mem.importance, "importance"), check_unit(mem.confidence, "confidence")
    for when in (mem.created_at, mem.updated_at, mem.last_accessed_at, mem.expires_at, mem.stored_at):
        if when is not None:
            parse_time(when)
    return mem


def _write(out: Path, key: str | None, found: dict[str, Any]) -> dict[str, Any]:
    """The new store at ``out`` with every usable salvaged row; removed again if this fails."""
    from .sqlite import SQLiteStore

    mems: dict[str, Memory] = {}
    damaged: list[str] = []
    for row in found["memories"].values():
        try:
            mem = _memory(row)
        except (MnemoError, ValueError, TypeError, KeyError, json.JSONDecodeError):
            damaged.append(str(row.get("id")))
            continue
        mems.setdefault(mem.id, mem)
    history: dict[str, list[dict[str, Any]]] = {}
    for _, e in sorted(found["events"].items()):  # rowid order is the order they happened in
        try:
            event = {"kind": str(e["kind"]), "at": e["at"], "cause": e.get("cause"), "data": json.loads(e.get("data") or "{}")}
            parse_time(event["at"])
        except (MnemoError, ValueError, TypeError, KeyError, json.JSONDecodeError):
            continue
        if e.get("memory_id") in mems:
            history.setdefault(e["memory_id"], []).append(event)
    report: dict[str, Any] = {"memories_saved": 0, "memories_read": len(found["memories"]), "damaged_ids": damaged,
                              "events": 0, "relations": 0, "sources": 0}
    store = SQLiteStore(out, create=True, key=key)
    try:
        with store.transaction():
            for mem in sorted(mems.values(), key=lambda m: (m.stored_at or m.created_at, m.id)):
                text = embed_text(mem)
                store.insert(mem, embed_hash=_text.text_hash(text), tokens=_text.index_tokens(text), cause="salvage")
                if mem.id in history:  # as it was, times included, instead of insert's own event
                    store.replace_events(mem.id, history[mem.id])
                    report["events"] += len(history[mem.id])
                report["memories_saved"] += 1
            for r in found["relations"].values():
                if r.get("src") in mems and r.get("dst") in mems and r.get("kind") in _LINK_KINDS:
                    try:
                        store.conn.execute("INSERT OR IGNORE INTO relations (src, dst, kind, strength, created_at) VALUES (?, ?, ?, ?, ?)",
                                           (r["src"], r["dst"], r["kind"], float(r["strength"]), str(r["created_at"])))
                    except (apsw.ConstraintError, TypeError, ValueError):
                        continue
                    report["relations"] += 1
            for s in found["sources"].values():
                try:
                    store.put_source(source_row(tuple(s.get(c) for c in SOURCE_COLUMNS)))
                except (apsw.ConstraintError, TypeError, ValueError, json.JSONDecodeError):
                    continue
                report["sources"] += 1
    except BaseException:
        store.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{out}{suffix}").unlink(missing_ok=True)
        raise
    store.close()
    known = found["known_ids"]
    report["memories_known"] = None if known is None else len(set(known) | set(mems))
    report["lost_ids"] = [] if known is None else sorted(set(known) - set(mems))
    report["skipped_ranges"] = {t: [list(r) for r in ranges] for t, ranges in found["skipped"].items() if ranges}
    report["missing_tables"] = found["missing"]
    report["memories_from_pages"] = found.get("from_pages", 0)
    report["path"] = str(out)
    return report

