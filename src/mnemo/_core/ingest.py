"""Ingest: files, folders, Markdown, chat exports and web pages, chunked and kept in sync.

``IngestOps`` is a mixin of :class:`mnemo.Mnemo`.

Each document is a *source* (``file:<absolute path>``, ``url:<URL>`` or ``chat:<absolute
path>``) recorded in the store's ``sources`` table with its content hash; its chunks are
``note`` memories whose ``source`` is that key. Re-ingesting is idempotent and incremental:

* an unchanged document (same content hash, same chunk size) is skipped without reading
  further;
* a changed one is re-chunked; chunks whose text and heading path are unchanged stay as they
  are, the others are *superseded* (kept, with an event) by the new chunks;
* a document found at a new path with the content hash of a source whose file is gone is a
  *rename*: the source and its chunks move to the new key and nothing is re-embedded;
* one whose content hash matches no such source, but which keeps most of the chunks of one
  (:func:`mnemo._ingest.chunk.edit_similarity`), was *renamed and edited*: the source moves
  to the new key, then the edit is handled like any other (unchanged chunks stay, the rest
  are superseded), so the same paragraph is not stored twice under two keys;
* ``sync=True`` archives the chunks of files that are gone from the folders ingested.

A bad document never stops a run: it is reported in ``skipped`` with the reason.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base import text as _text
from .._base.models import check_scope, check_tags, check_type, check_vectors_mode, format_time, utcnow
from .._ingest.chunk import (
    DEFAULT_CHUNK_CHARS,
    Chunk,
    check_chunk_chars,
    chunk_markdown,
    chunk_text,
    edit_similarity,
    embed_prefix,
    first_heading,
    parse_front_matter,
)
from .._ingest.docs import DEFAULT_MAX_BYTES, Document, decode_bytes, document_time, read_document, walk
from ..errors import IngestError, InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from .mnemo import Mnemo

Progress = Callable[[int, int], None]
#: chunks embedded and written per batch (bounds memory for a large file)
BATCH = 256
#: how chat exports name the person who exported them
_SELF = {"我", "自己", "me", "i", "myself", "self"}


def _noop(done: int, total: int) -> None:
    pass


class IngestOps:
    """Operations that take documents in (``ingest``, ``sources``, ``watch``)."""

    # ------------------------------------------------------------ public operations

    def ingest(
        self: "Mnemo",
        paths_or_urls: Sequence[str | os.PathLike[str]] | str,
        *,
        scope: str | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        sync: bool = False,
        type: str = "note",
        tags: Sequence[str] | str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        web_timeout: float = 10.0,
        web_deadline: float = 30.0,
        capture: bool = True,
        progress: Progress | None = None,
        vectors: str = "now",
    ) -> dict[str, Any]:
        """Ingest files, folders (recursively) and http(s) URLs; see the module docstring.
        ``vectors="later"``: the chunks are searchable by their words when this returns and get
        their vectors from ``fill_vectors`` (the warm service runs it in the background); the
        summary's ``vectors_pending`` says how many wait.

        Returns a summary: ``files_seen``, ``ingested``, ``unchanged``, ``skipped`` (``[{path,
        reason}]``), ``chunks`` (written), ``superseded``, ``archived``, ``renamed``,
        ``sources`` (what happened to each) and ``timings`` (seconds spent reading, chunking,
        embedding and storing). Raises :class:`IngestError` only when documents were given and
        none could be ingested."""
        from .._ingest.webpage import is_url

        if isinstance(paths_or_urls, (str, os.PathLike)):
            paths_or_urls = [paths_or_urls]
        items = [os.fspath(p) for p in paths_or_urls]
        if not items:
            raise InvalidInputError("nothing to ingest: give files, folders or URLs")
        opts = dict(scope=check_scope(scope, self.scope), type=check_type(type), tags=check_tags(tags),
                    chunk_chars=check_chunk_chars(chunk_chars), capture=capture, defer=check_vectors_mode(vectors))
        if not (isinstance(max_bytes, int) and max_bytes > 0) or not (web_timeout > 0 and web_deadline > 0):
            raise InvalidInputError("max_bytes, the web timeout and the web deadline must be positive")
        run = _Run(progress or _noop)
        urls = [x for x in items if is_url(x)]
        found = walk([x for x in items if not is_url(x)], include=include, exclude=exclude)
        run.report["skipped"].extend(found.skipped)
        run.report["files_seen"] += len(found.skipped)
        run.total = len(found.files) + len(urls)
        # a key whose file name was redacted names no file on disk: the walk says it is there
        run.present = {self._scrub_path(str(path)) for path, _ in found.files}
        for path, kind in found.files:
            run.step(str(path), lambda: self._ingest_file(path, kind, run, max_bytes=max_bytes, **opts))
        for url in urls:
            run.step(url, lambda: self._ingest_url(url, run, timeout=web_timeout, deadline=web_deadline, max_bytes=max_bytes, **opts))
        if sync:
            gone = [Path(x).absolute() for x in items if not is_url(x) and not os.path.lexists(os.path.expanduser(x))]
            self._sync_deleted(found.roots, gone, run, present=run.present)
        report = run.finish()
        if opts["defer"]:
            report["vectors_pending"] = self.vectors_pending()
        if run.total and not (report["ingested"] or report["unchanged"] or report["renamed"] or report["archived"]):
            reasons = "; ".join(f"{s['path']}: {s['reason']}" for s in report["skipped"][:3])
            raise IngestError(f"nothing could be ingested ({reasons})")
        return report

    def sources(self: "Mnemo", *, kind: str | None = None, status: str | None = None, prefix: str | None = None) -> list[dict[str, Any]]:
        """What was ingested: one row per document (key, kind, title, chunks, status, when)."""
        if kind is not None and kind not in ("file", "url", "chat"):
            raise InvalidInputError(f"source kind must be file, url or chat, not {kind!r}")
        if status is not None and status not in ("active", "deleted"):
            raise InvalidInputError(f"source status must be active or deleted, not {status!r}")
        return self.store.list_sources(kind=kind, status=status, prefix=prefix)

    def forget_source(self: "Mnemo", key: str) -> dict[str, Any]:
        """Stop remembering an ingested document: its chunks are archived (each can be restored)
        and the source is marked deleted; ``ingest`` of the file brings it back. Returns
        ``{"source", "archived"}``."""
        src = self.store.get_source(key) if isinstance(key, str) else None
        if src is None:
            raise NotFoundError(f"no source {key!r} (see `mnemo sources`)")
        with self.store.transaction():
            mems = self.store.memories_by_source(src["key"])
            for mem in mems:
                self.store.set_status(mem.id, "archived")
                self.store.add_event(mem.id, "archived", "forget source", {"source": src["key"], "reason": "the source was removed"})
            self.store.put_source({**src, "status": "deleted", "updated_at": format_time(utcnow())})
        return {"source": src["key"], "archived": len(mems)}

    def ingest_upload(self: "Mnemo", name: str, data: bytes, *, folder: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES,
                      **options: Any) -> dict[str, Any]:
        """Ingest a document handed over as bytes (a file dropped on the web app): ``name`` must
        be a plain file name (no folder part, no ``..``), the text is decoded and redacted, and
        the redacted text is kept as ``folder/name`` (0600), the document's source from then on:
        re-ingesting or syncing it reads that copy, and no unredacted byte is written anywhere.
        ``options`` are :meth:`ingest`'s."""
        clean = name.strip() if isinstance(name, str) else ""
        if (not clean or clean in (".", "..") or clean.startswith(".") or any(c in clean for c in "/\\\0")
                or any(ord(c) < 32 for c in clean) or len(clean.encode()) > 200):
            raise InvalidInputError(f"not a plain file name: {name!r} (no folders, no leading dot, at most 200 bytes)")
        if len(data) > max_bytes:
            raise IngestError(f"{clean}: {len(data) / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit")
        if not data.strip():
            raise IngestError(f"{clean}: the file is empty")
        text, _ = decode_bytes(data)
        target = Path(folder) / self._scrub_path(clean)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self.redact(text).text)
        os.replace(tmp, target)
        return self.ingest([target], max_bytes=max_bytes, **options)

    def watch(self: "Mnemo", folder: str | os.PathLike[str], **kwargs: Any) -> dict[str, Any]:
        """Watch ``folder`` and ingest files as they appear or change, until stopped; see
        :func:`mnemo._core.watch.watch_folder` for the options."""
        from .watch import watch_folder

        return watch_folder(self, folder, **kwargs)

    # ------------------------------------------------------------ one document

    def _ingest_file(self: "Mnemo", path: Path, kind: str, run: "_Run", *, max_bytes: int, **opts: Any) -> None:
        t0 = time.perf_counter()
        doc = self._redacted_document(read_document(path, kind, max_bytes=max_bytes))
        run.timings["read"] += time.perf_counter() - t0
        run.report["bytes"] += doc.size
        where = self._scrub_path(str(path))  # a file name can hold a phone number (张伟-136…-简历.md)
        for prefix in ("file:", "chat:"):  # checked before parsing: an unchanged file costs a hash
            existing = self.store.get_source(prefix + where)
            if existing is not None and _unchanged(existing, doc.content_hash, opts):
                run.done(existing["key"], "unchanged", existing["chunks"])
                return
        t0 = time.perf_counter()
        parsed = _parse_file(doc, opts["chunk_chars"], scrub=self._scrub)
        run.timings["chunk"] += time.perf_counter() - t0
        key = ("chat:" if parsed.kind == "chat" else "file:") + where
        existing = self.store.get_source(key)
        extra: dict[str, Any] = {"encoding": doc.encoding, "path": where}
        renamed_from = None
        if existing is None or existing["status"] != "active":
            old = self._renamed_from(doc.content_hash, parsed.kind, key, run, opts)
            if old is not None:
                self._rename(old, key, doc, run)
                return
        if existing is None:  # a key with a row of its own (deleted, now back) keeps it
            old = self._edited_from(parsed, key, run, opts)
            if old is not None:
                # two steps, each consistent: the move, then the edit as an ordinary update (a
                # failure between them leaves the moved source, updated by the next ingest)
                self._move_to(old, key, doc, run)
                existing, renamed_from = self.store.get_source(key), old["key"]
                extra["renamed_from"] = renamed_from
        self._write(key, parsed, run, existing=existing, size=doc.size, mtime=doc.mtime, content_hash=doc.content_hash,
                    extra=extra, renamed_from=renamed_from, **opts)

    def _scrub_path(self: "Mnemo", path: str) -> str:
        """A path redacted one name at a time, each name apart from its extension: a file name
        can hold a phone number or an e-mail address (张伟-136…-简历.md), and read whole,
        ``alice@example.com.md`` is an address at the domain ``com.md`` whose "TLD" is a file
        extension, which the redactor leaves alone. Names are redacted independently, so a
        folder's redacted path is a prefix of its files' redacted paths."""
        if self.redactor is None:
            return path
        names = []
        for name in path.split(os.sep):
            stem, dot, ext = name.rpartition(".")
            if dot and stem and len(ext) <= 8 and ext.isalnum():
                name = self._scrub(stem) + "." + ext
            names.append(self._scrub(name))
        return os.sep.join(names)

    def _redacted_document(self: "Mnemo", doc: Document) -> Document:
        """The document with its text redacted whole, before any chunk boundary can cut a key in
        two (a 4096-bit key kept 43 of its 50 lines), and its hash taken of that redacted text:
        a hash of the raw text would let anyone holding the store recover a short masked value
        by brute force (a six-digit PIN in seconds). A chat export is redacted per message
        after parsing instead, so that its JSON stays parseable."""
        if self.redactor is None or doc.kind == "chat":
            return doc
        text = self._scrub(doc.text)
        return replace(doc, text=text, content_hash=_text.text_hash(text))

    def _ingest_url(self: "Mnemo", url: str, run: "_Run", *, timeout: float, deadline: float, max_bytes: int, **opts: Any) -> None:
        from .._ingest.docs import decode_bytes
        from .._ingest.webpage import extract, fetch

        t0 = time.perf_counter()
        page = fetch(url, timeout=timeout, deadline=deadline, max_bytes=max_bytes)
        text, encoding = decode_bytes(page.data, page.charset)
        run.timings["read"] += time.perf_counter() - t0
        run.report["bytes"] += len(page.data)
        t0 = time.perf_counter()
        if page.content_type in ("text/html", "application/xhtml+xml"):
            title, body = extract(text)
        else:
            title, body = "", text
        # redacted whole before chunking; the URL too (a query string can carry a token)
        body, url_seen = self._scrub(body), self._scrub(url)
        title = self._scrub(title or page.final_url)
        chunks = chunk_markdown(body, chunk_chars=opts["chunk_chars"])
        parsed = _Parsed("url", title, utcnow(), "fetched", body, chunks, [])
        run.timings["chunk"] += time.perf_counter() - t0
        key = "url:" + url_seen
        content_hash = _text.text_hash(body)
        existing = self.store.get_source(key)
        if _unchanged(existing, content_hash, opts):
            run.done(key, "unchanged", existing["chunks"] if existing else 0)
            return
        self._write(key, parsed, run, existing=existing, size=len(page.data), mtime=None, content_hash=content_hash,
                    extra={"url": url_seen, "final_url": self._scrub(page.final_url), "origin": "web", "encoding": encoding}, **opts)

    def _write(self: "Mnemo", key: str, parsed: "_Parsed", run: "_Run", *, existing: dict[str, Any] | None, size: int,
               mtime: float | None, content_hash: str, extra: dict[str, Any], scope: str, type: str, tags: list[str],
               chunk_chars: int, capture: bool, defer: bool = False, renamed_from: str | None = None) -> None:
        """Write a new or changed document: keep unchanged chunks, supersede the rest, insert new.
        ``renamed_from``: the key the source just moved from (a rename with an edit)."""
        if not parsed.records:
            raise IngestError("no text to ingest")
        t0 = time.perf_counter()
        old = self.store.memories_by_source(key) if existing is not None else []
        unused: dict[str, list[Any]] = {}
        for mem in old:
            unused.setdefault(mem.metadata.get("chunk_hash", ""), []).append(mem)
        kept, fresh_records, moved = 0, [], []
        # titles and headings are stored in metadata and the sources table: redacted like content
        clean = self._redacted_prefix
        parsed.title = clean(parsed.title) if parsed.title else parsed.title
        for rec in parsed.records:
            rec.update(scope=scope, type=type, tags=tags, source=key)
            md = rec["metadata"]
            md["title"] = parsed.title
            md["headings"] = [clean(h) for h in md["headings"]]
            match = unused.get(rec["metadata"]["chunk_hash"])
            if match and match[0].scope == scope and match[0].type == type:
                same = match.pop(0)
                kept += 1
                # its place in the new version (recall reads around a chunk by it): an edit above
                # it moved it; the text and its vector stay
                place = {k: md[k] for k in _PLACE if k in md and same.metadata.get(k) != md[k]}
                if place:
                    moved.append((same.id, {**same.metadata, **place}))
            else:
                fresh_records.append(rec)
        replaced = [m for ms in unused.values() for m in ms]
        prepared = [self._prepare(r) for r in fresh_records]
        run.timings["chunk"] += time.perf_counter() - t0
        with self._lock:  # every batch of this file under one lock: no other write interleaves
            written: list[Any] = []
            batches = [prepared[i: i + BATCH] for i in range(0, len(prepared), BATCH)] or [[]]
            for n, batch in enumerate(batches):
                t0 = time.perf_counter()
                # one transaction per batch; the last also records the source, so a small file
                # is one commit and a crash never leaves a source row without its chunks
                with self._writing(batch, cause="ingest", defer=defer) as rows:
                    t1 = time.perf_counter()
                    run.timings["embed"] += t1 - t0
                    for _, _, insert in rows:
                        insert()
                    written.extend(batch)
                    if n == len(batches) - 1:
                        for memory_id, metadata in moved:
                            self.store.update_fields(memory_id, metadata=metadata)
                        self._finish_source(key, parsed, written, replaced, existing, size=size, mtime=mtime,
                                            content_hash=content_hash, scope=scope, type=type, chunk_chars=chunk_chars, extra=extra)
                run.timings["store"] += time.perf_counter() - t1
        run.report["chunks"] += len(written)
        run.report["superseded"] += len(replaced)
        if renamed_from is not None:
            # counted as a rename and, since chunks were written, as ingested like any update
            run.report["renamed"] += 1
            run.report["ingested"] += 1
            run.done(key, "renamed", len(parsed.records), kept=kept, renamed_from=renamed_from, edited=True)
        else:
            run.done(key, "updated" if existing is not None and existing["status"] == "active" else "new", len(parsed.records),
                     kept=kept)
        if capture and parsed.messages:
            self._capture_chat(parsed.messages, scope, key, run)

    def _finish_source(self: "Mnemo", key: str, parsed: "_Parsed", written: list[Any], replaced: list[Any],
                       existing: dict[str, Any] | None, *, size: int, mtime: float | None, content_hash: str, scope: str,
                       type: str, chunk_chars: int, extra: dict[str, Any]) -> None:
        """Supersede the chunks the new version no longer has and record the source (in a transaction)."""
        for mem in replaced:
            by = _nearest(written, mem.metadata.get("chunk", 0))
            self.store.set_status(mem.id, "superseded", superseded_by=by)
            self.store.add_event(mem.id, "superseded", "ingest", {"source": key, "by": by, "reason": "the document changed"})
        now = format_time(utcnow())
        self.store.put_source({
            "key": key, "kind": parsed.kind, "content_hash": content_hash, "title": parsed.title,
            "doc_time": format_time(parsed.time), "size": size, "mtime": mtime, "chunks": len(parsed.records),
            "scope": scope, "status": "active", "ingested_at": existing["ingested_at"] if existing else now,
            "updated_at": now, "metadata": {**extra, "chunk_chars": chunk_chars, "type": type, "time_from": parsed.time_from},
        })

    def _capture_chat(self: "Mnemo", messages: list[Any], scope: str, key: str, run: "_Run") -> None:
        """Run the capture rules over a chat export's messages (issue "capture": ``Mnemo.auto``).
        This is the single call site; it does nothing until that operation exists."""
        auto = getattr(self, "auto", None)
        if not callable(auto):
            return
        from ..errors import MnemoError

        # an export that names roles (ChatGPT, generic JSON) is passed as it is; in one that only
        # names people (WeChat), only the owner's own messages ("我", "me") speak for the user:
        # a friend's "我对花生过敏" is not the user's allergy
        convo = [{"role": m.role, "content": m.text} if m.role else {"role": "user", "content": m.text}
                 for m in messages if m.role or m.sender.strip().lower() in _SELF]
        if not convo:
            return
        try:
            result = auto(convo, scope=scope, session=key)
        except MnemoError as exc:  # capture is a bonus; the messages themselves are stored
            run.report.setdefault("warnings", []).append(f"{key}: capture failed: {exc}")
            return
        run.report["captured"] = run.report.get("captured", 0) + len((result or {}).get("saved", []) or [])

    # ------------------------------------------------------------ renames and deletions

    def _renamed_from(self: "Mnemo", content_hash: str, kind: str, key: str, run: "_Run", opts: dict[str, Any]) -> dict[str, Any] | None:
        """A source with this content whose file is gone: the document was renamed or moved."""
        for src in self.store.sources_by_hash(content_hash):
            if _could_have_moved(src, kind, key, opts, run.present):
                return src
        return None

    def _edited_from(self: "Mnemo", parsed: "_Parsed", key: str, run: "_Run", opts: dict[str, Any]) -> dict[str, Any] | None:
        """A source whose file is gone and whose chunks this new document mostly keeps: the
        document was renamed (or moved) and edited. Compared by the content hashes of the
        chunks' text, not by their embedding keys: a title taken from the file name changes
        with the name, and so does every chunk's prefix."""
        new = {_text.content_hash(rec["content"]) for rec in parsed.records}
        best, best_score = None, 0.0
        for src in self._vanished(parsed.kind, run):
            # a source of fewer than half as many chunks cannot keep half of this one: skip it
            # before reading its chunks (its distinct chunks are at most its count)
            if 2 * src["chunks"] < len(new) or not _could_have_moved(src, parsed.kind, key, opts, run.present):
                continue
            score = edit_similarity(new, self._chunk_hashes(src, run))
            if score > best_score:
                best, best_score = src, score
        return best

    def _vanished(self: "Mnemo", kind: str, run: "_Run") -> list[dict[str, Any]]:
        """Sources of this kind whose file is gone, listed once per run (a folder of new files
        would otherwise list and stat every source once per file)."""
        if kind not in run.vanished:
            run.vanished[kind] = {src["key"]: src for src in self.store.list_sources(kind=kind)
                                  if src["key"].startswith(("file:", "chat:")) and not os.path.lexists(src["key"].split(":", 1)[1])}
        return list(run.vanished[kind].values())

    def _chunk_hashes(self: "Mnemo", src: dict[str, Any], run: "_Run") -> set[str]:
        """The content hashes of the chunks a rename would bring along: the active ones, or for a
        source ``sync`` marked deleted, the archived ones a rename restores."""
        if src["key"] not in run.chunk_hashes:
            statuses = ("active",) if src["status"] == "active" else ("archived",)
            run.chunk_hashes[src["key"]] = {m.content_hash for m in self.store.memories_by_source(src["key"], statuses)
                                            if m.metadata.get("chunk_hash") is not None}
        return run.chunk_hashes[src["key"]]

    def _rename(self: "Mnemo", old: dict[str, Any], key: str, doc: Document, run: "_Run") -> None:
        """Move a source and its chunks to the new key; nothing is re-embedded."""
        self._move_to(old, key, doc, run)
        run.report["renamed"] += 1
        run.done(key, "renamed", old["chunks"], renamed_from=old["key"])

    def _move_to(self: "Mnemo", old: dict[str, Any], key: str, doc: Document, run: "_Run") -> None:
        """Move a source and its chunks to the new key, with a ``renamed`` event in each chunk's
        history. A source whose chunks ``sync`` had archived comes back to life."""
        with self.store.transaction():
            meta = {**old["metadata"], "path": self._scrub_path(str(doc.path)), "renamed_from": old["key"]}
            self.store.rename_source(old["key"], key, meta)
            for mem in self.store.memories_by_source(key, None):
                if mem.metadata.get("chunk_hash") is None:
                    continue
                self.store.add_event(mem.id, "renamed", "ingest", {"from": old["key"], "to": key})
                if old["status"] != "active" and mem.status == "archived":
                    self.store.set_status(mem.id, "active")
                    self.store.add_event(mem.id, "restored", "ingest", {"from": "archived", "source": key})
            src = self.store.get_source(key) or {}
            self.store.put_source({**src, "status": "active", "mtime": doc.mtime, "updated_at": format_time(utcnow())})
        for cached in run.vanished.values():  # it is no longer there to be claimed by another file
            cached.pop(old["key"], None)

    def _move_source(self: "Mnemo", old_key: str, new_key: str) -> None:
        """Point a source and its chunks at the file's new place (the inbox moved it)."""
        old_key, new_key = (k.split(":", 1)[0] + ":" + self._scrub_path(k.split(":", 1)[1]) for k in (old_key, new_key))  # keys hold redacted paths
        with self.store.transaction():
            src = self.store.get_source(old_key)
            if src is not None:
                meta = {**src["metadata"], "path": new_key.split(":", 1)[1], "moved_from": old_key}
                self.store.rename_source(old_key, new_key, meta)

    def _sync_deleted(self: "Mnemo", roots: list[Path], gone: list[Path], run: "_Run", *, present: set[str]) -> None:
        """Archive the chunks of sources whose files are gone from the folders (or paths, files or
        folders, given that no longer exist). ``present``: the (redacted) paths the walk found,
        since a key whose file name was redacted names no file on disk."""
        candidates: dict[str, dict[str, Any]] = {}
        for root in roots:
            for kind in ("file:", "chat:"):
                for src in self.store.list_sources(status="active", prefix=kind + self._scrub_path(str(root)) + os.sep):
                    candidates[src["key"]] = src
        for path in gone:
            for kind in ("file:", "chat:"):
                src = self.store.get_source(kind + self._scrub_path(str(path)))
                if src is not None and src["status"] == "active":
                    candidates[src["key"]] = src
                # a deleted folder: every file that was ingested from under it
                for src in self.store.list_sources(status="active", prefix=kind + self._scrub_path(str(path)) + os.sep):
                    candidates[src["key"]] = src
        for key, src in candidates.items():
            if key.split(":", 1)[1] in present or os.path.lexists(key.split(":", 1)[1]):
                continue
            with self.store.transaction():
                mems = self.store.memories_by_source(key)
                for mem in mems:
                    self.store.set_status(mem.id, "archived")
                    self.store.add_event(mem.id, "archived", "ingest --sync", {"source": key, "reason": "the file was deleted"})
                self.store.put_source({**src, "status": "deleted", "updated_at": format_time(utcnow())})
            run.report["archived"] += len(mems)
            run.done(key, "archived", len(mems))


# ---------------------------------------------------------------- parsing a file

class _Parsed:
    """A document turned into memory records (chunks), with its title and time."""

    def __init__(self, kind: str, title: str, when: datetime, time_from: str, text: str, chunks: list[Chunk],
                 messages: list[Any], records: list[dict[str, Any]] | None = None):
        self.kind = kind
        self.title = title
        self.time = when
        self.time_from = time_from
        self.messages = messages
        self.records = records if records is not None else _chunk_records(title, when, chunks, origin=kind)


#: a chunk's place in its document, brought up to date on a kept chunk when an edit moves it
#: (the total count is the source's; rewriting it on every chunk at every edit was churn)
_PLACE = ("chunk", "start", "end")


def _chunk_records(title: str, when: datetime, chunks: list[Chunk], *, origin: str) -> list[dict[str, Any]]:
    out = []
    for c in chunks:
        prefix = embed_prefix(title, c.headings)
        out.append({
            "content": c.text,
            "created_at": when,
            "embed_prefix": prefix,
            "metadata": {
                "title": title, "headings": list(c.headings), "chunk": c.index, "chunks": len(chunks),
                "start": c.start, "end": c.end, "kind": c.kind, "origin": "web" if origin == "url" else "file",
                "chunk_hash": _text.text_hash(prefix + "\n" + c.text), **c.extra,
            },
        })
    return out


def _parse_file(doc: Document, chunk_chars: int, *, scrub: Callable[[str], str]) -> _Parsed:
    """The document as memory records; ``scrub`` redacts what a chat export holds (each message's
    text and sender), before windows cut long messages apart."""
    from .._ingest.chatexport import looks_like_wechat, parse_json_export, parse_wechat

    text = doc.text
    if doc.kind == "chat" or (doc.kind == "text" and looks_like_wechat(text)):
        messages = parse_wechat(text) if doc.kind == "text" else parse_json_export(text)
        for msg in messages:
            msg.text, msg.sender, msg.conversation = scrub(msg.text), scrub(msg.sender), scrub(msg.conversation)
        return _chat_parsed(doc, messages, chunk_chars)
    if doc.kind == "html":
        from .._ingest.webpage import extract

        title, body = extract(text)
        when, source = document_time({}, doc.path, doc.mtime)
        return _Parsed("file", title or doc.path.stem, when, source, body, chunk_markdown(body, chunk_chars=chunk_chars), [])
    meta, offset = parse_front_matter(text) if doc.kind == "markdown" else ({}, 0)
    when, source = document_time(meta, doc.path, doc.mtime)
    if doc.kind == "markdown":
        title = str(meta.get("title") or first_heading(text, offset) or doc.path.stem)
        chunks = chunk_markdown(text, chunk_chars=chunk_chars, start=offset)
    else:
        title = doc.path.stem
        chunks = chunk_text(text, chunk_chars=chunk_chars)
    return _Parsed("file", title, when, source, text, chunks, [])


def _chat_parsed(doc: Document, messages: list[Any], chunk_chars: int) -> _Parsed:
    from .._ingest.chatexport import windows

    title = doc.path.stem
    records = []
    wins = windows(messages, chunk_chars=chunk_chars)
    for i, win in enumerate(wins):
        first, last = win.messages[0], win.messages[-1]
        heading = tuple(x for x in (first.conversation, first.time.astimezone().strftime("%Y-%m-%d")) if x)
        prefix = embed_prefix(title, heading)
        content = win.text
        records.append({
            "content": content,
            "created_at": first.time,
            "embed_prefix": prefix,
            # a window never spans two conversations of an export; recall reads around a hit only
            # within its conversation (see _recall/sequence.py)
            "source_session": first.conversation or None,
            "metadata": {
                "title": title, "headings": list(heading), "chunk": i, "chunks": len(wins), "origin": "chat",
                "speakers": list(dict.fromkeys(m.sender for m in win.messages)), "messages": len(win.messages),
                "time_start": format_time(first.time), "time_end": format_time(last.time),
                "chunk_hash": _text.text_hash(prefix + "\n" + content),
            },
        })
    return _Parsed("chat", title, messages[0].time, "first message", "", [], messages, records)


def _could_have_moved(src: dict[str, Any], kind: str, key: str, opts: dict[str, Any], present: set[str]) -> bool:
    """Whether a source may be the earlier place of a document found at ``key``: another file or
    chat source of the same kind, ingested with the same scope and chunk size, whose file is gone
    (so a copy, its original still there, is never taken for a rename)."""
    path = src["key"].split(":", 1)[1]
    return (src["key"] != key and src["key"].startswith(("file:", "chat:")) and src["kind"] == kind
            and src["scope"] == opts["scope"] and src["metadata"].get("chunk_chars") == opts["chunk_chars"]
            and path not in present and not os.path.lexists(path))


def _unchanged(existing: dict[str, Any] | None, content_hash: str, opts: dict[str, Any]) -> bool:
    return (existing is not None and existing["status"] == "active" and existing["content_hash"] == content_hash
            and existing["scope"] == opts["scope"] and existing["metadata"].get("chunk_chars") == opts["chunk_chars"]
            and existing["metadata"].get("type", "note") == opts["type"])


def _nearest(written: list[Any], index: int) -> str | None:
    """The new chunk closest in position to a replaced one (what it is superseded by)."""
    if not written:
        return None
    return min(written, key=lambda m: abs(int(m.metadata.get("chunk", 0)) - int(index))).id


class _Run:
    """The running tally of one ingest call."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.total = 0
        self.seen = 0
        #: the (redacted) paths this run's walk found
        self.present: set[str] = set()
        #: per source kind, the sources whose file was gone when first asked (see _vanished)
        self.vanished: dict[str, dict[str, dict[str, Any]]] = {}
        #: the chunk content hashes of those sources, read when first compared
        self.chunk_hashes: dict[str, set[str]] = {}
        self.timings = {"read": 0.0, "chunk": 0.0, "embed": 0.0, "store": 0.0}
        self.report: dict[str, Any] = {"files_seen": 0, "ingested": 0, "unchanged": 0, "skipped": [], "chunks": 0,
                                       "superseded": 0, "archived": 0, "renamed": 0, "bytes": 0, "sources": []}

    def step(self, what: str, fn: Callable[[], None]) -> None:
        self.report["files_seen"] += 1
        try:
            fn()
        except IngestError as exc:
            self.report["skipped"].append({"path": what, "reason": str(exc)})
        except InvalidInputError as exc:  # e.g. a chunk the core refuses: report it, go on
            self.report["skipped"].append({"path": what, "reason": str(exc)})
        self.seen += 1
        self.progress(self.seen, self.total)

    def done(self, key: str, action: str, chunks: int, **extra: Any) -> None:
        if action in ("new", "updated"):
            self.report["ingested"] += 1
        elif action == "unchanged":
            self.report["unchanged"] += 1
        self.report["sources"].append({"key": key, "action": action, "chunks": chunks, **extra})

    def finish(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for s in self.report["skipped"]:
            counts[s["reason"]] = counts.get(s["reason"], 0) + 1
        self.report["skipped_counts"] = counts
        self.report["timings"] = {k: round(v, 4) for k, v in self.timings.items()}
        return self.report

