"""Sync: one memory on every device through any shared folder (``mnemo sync DIR``), and
``merge`` of another store. A mixin of :class:`mnemo.Mnemo`.

Each device writes what changed here since its last sync as one immutable segment under
``DIR/<device>/`` (``_replica.segments``), then applies every other device's segments it has
not applied yet. What travels is state, not commands: a ``put`` record is a memory's whole
state (fields, status, its history, its outgoing links, its vector when the model is the same),
versioned by a hybrid logical clock; a ``purge`` record is a tombstone. Applying is a merge
that is the same in any order and any number of times:

* per memory the later version wins (the clock orders versions the same on every device); a
  version that loses to one it was not derived from is a **conflict**: it stays in the
  memory's history as a ``sync_conflict`` event and ``sync_status`` lists it;
* histories and links are unions;
* a purge is final: the memory and its traces leave this store, and this device rewrites its
  own segments so none keeps the text (every device does the same when it applies the purge).

Nothing here is lost to a kill: a segment is written (renamed into place) before this store
records what it holds, so an interrupted sync writes the same changes again into the next
segment (applying twice is harmless); a segment is marked applied only after all of it was.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base.models import Memory, embed_text, format_time, utcnow
from .._replica import segments as seg
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from .mnemo import Mnemo

#: fields of a memory that its newest version decides (the rest are this device's own: access counts)
STATE_FIELDS = ("content", "type", "scope", "tags", "importance", "confidence", "expires_at", "pinned", "metadata", "source")
#: memories read per batch when writing a segment
BATCH = 1000
#: this device's segments are folded into one snapshot when there are more than this many
COMPACT_AFTER = 200


def _event_key(e: dict[str, Any]) -> str:
    return json.dumps([e.get("kind"), e.get("at"), e.get("cause"), e.get("data")], sort_keys=True, ensure_ascii=False)


def _union(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two histories as one: every event once, in time order (ties in a fixed order)."""
    seen = {_event_key(e): e for e in a}
    for e in b:
        seen.setdefault(_event_key(e), e)
    return sorted(seen.values(), key=lambda e: (str(e.get("at")), _event_key(e)))


class SyncOps:
    """sync · sync_status · merge."""

    def _device(self: "Mnemo") -> str:
        """This store's device id (made once: host name and a random part)."""
        dev = self.store.sync_value("device")
        if dev is None:
            host = re.sub(r"[^A-Za-z0-9_-]+", "-", socket.gethostname())[:24].strip("-") or "device"
            dev = f"{host}-{uuid.uuid4().hex[:6]}"
            with self.store.transaction():
                self.store.set_sync_value("device", dev)
        return dev

    def _segment_key(self: "Mnemo", key: str | None) -> str | None:
        if getattr(self.store, "encrypted", False) and key is None:
            raise InvalidInputError("this store is encrypted: sync needs its key (MNEMO_KEY, the keyring or the key file), "
                                    "and seals the segments with it")
        return key if getattr(self.store, "encrypted", False) else None

    def sync(self: "Mnemo", folder: str | os.PathLike[str], *, key: str | None = None, scopes: Sequence[str] | None = None,
             compact: bool = False, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Write this device's changes to ``folder`` and apply every other device's; see the module docstring.

        ``scopes`` limits both directions to those scopes (sharing a project with a team store).
        ``compact`` (and, by itself, more than :data:`COMPACT_AFTER` segments of this device)
        folds this device's segments into one snapshot.
        Returns what was written and applied, the segments skipped for now (still being copied,
        damaged, from a newer mnemo) with the reason, and the conflicts found."""
        root = Path(folder)
        if root.exists() and not root.is_dir():
            raise InvalidInputError(f"{root} is not a folder")
        sealed = self._segment_key(key)
        device = self._device()
        mine = root / device
        mine.mkdir(parents=True, exist_ok=True)
        wanted = set(scopes) if scopes else None
        clock = seg.Clock(device, self.store.sync_value("clock"))
        report: dict[str, Any] = {"device": device, "written": None, "pushed": 0, "segments_applied": 0, "records_applied": 0,
                                  "skipped": [], "conflicts": 0, "purged": 0, "segments_cleaned": 0}
        purged_texts: set[str] = set()
        self._push(root, device, clock, sealed, wanted, report, purged_texts)
        self._pull(root, device, clock, sealed, wanted, report, purged_texts, progress)
        if purged_texts or report["purged"]:
            report["segments_cleaned"] = self._clean_segments(mine, device, sealed, purged_texts)
            if report["segments_cleaned"]:
                self._push(root, device, clock, sealed, wanted, report, set())  # the memories whose old records were dropped
        own = [n for n in (seg.segment_number(p.name) for p in mine.iterdir()) if n is not None]
        if compact or len(own) > COMPACT_AFTER:
            report["compacted"] = self._compact(mine, device, sealed)
        with self.store.transaction():
            self.store.set_sync_value("clock", clock.version())
        return report

    def _compact(self: "Mnemo", folder: Path, device: str, key: str | None) -> int:
        """Fold this device's segments into one snapshot: the latest version of each memory this
        device wrote (with the same version stamps, so applying it again changes nothing) and
        its purges; the older segments go. A new device reads one file instead of the whole
        past. Returns how many segments it replaced."""
        old = sorted(p for p in folder.iterdir() if seg.segment_number(p.name) is not None)
        if len(old) < 2:
            return 0
        records: list[dict[str, Any]] = []
        for _, mid, _, _ in self.store.events_after(0, ("purged",), 10**9):
            v = self.store.sync_versions([mid]).get(mid)
            if v is not None and v[3] == -1 and v[2] == device:
                records.append({"op": "purge", "id": mid, "hlc": v[0], "origin": device})
        after = 0
        while True:
            rows = self.store.memories_after_pk(after, BATCH)
            if not rows:
                break
            after = rows[-1][0]
            known = self.store.sync_versions([m.id for _, m in rows])
            for _, mem in rows:
                v = known.get(mem.id)
                if v is not None and v[2] == device and v[3] >= 0:
                    records.append(self._put_record(mem, v[0], v[1], device))
        self._write_segment(folder, device, records, key)
        for p in old:
            p.unlink(missing_ok=True)
        return len(old)

    # ------------------------------------------------------------ writing this device's segment

    def _push(self: "Mnemo", root: Path, device: str, clock: seg.Clock, key: str | None, scopes: set[str] | None,
              report: dict[str, Any], purged_texts: set[str]) -> None:
        event_cursor = int(self.store.sync_value("cursor_event") or 0)
        records: list[dict[str, Any]] = []
        versions: list[tuple[str, str, str | None, int]] = []
        model = self.store.get_meta("embedder")
        after = 0
        while True:
            rows = self.store.memories_to_sync(after, BATCH)
            if not rows:
                break
            after = rows[-1][0]
            ids = [m.id for _, _, m in rows]
            known = self.store.sync_versions(ids)
            hashes = self.store.embed_hashes(ids)
            vectors = self.store.get_embeddings(model, list(set(hashes.values()))) if model else {}
            for _, seq, mem in rows:
                if scopes is not None and mem.scope not in scopes:
                    continue
                v = known.get(mem.id)
                hlc = clock.tick()
                rec = self._put_record(mem, hlc, v[0] if v else None, device)
                blob = vectors.get(hashes.get(mem.id, ""))
                if blob is not None:
                    rec["vector"] = {"model": model, "hash": hashes[mem.id], "b64": base64.b64encode(blob).decode()}
                records.append(rec)
                versions.append((mem.id, hlc, v[0] if v else None, seq))
        tombstones = self.store.events_after(event_cursor, ("purged",), 100_000)
        if tombstones:
            known = self.store.sync_versions([mid for _, mid, _, _ in tombstones])
            for pk, mid, _, _ in tombstones:
                event_cursor = max(event_cursor, pk)
                v = known.get(mid)
                if v is not None and v[3] == -1 and v[2] != device:
                    continue  # a purge applied from another device: already in its segments
                records.append({"op": "purge", "id": mid, "hlc": clock.tick(), "origin": device})
                versions.append((mid, records[-1]["hlc"], None, -1))
                report["purged"] += 1
        if records:
            name = self._write_segment(root / device, device, records, key)
            report["written"] = name
            report["pushed"] += len(records)
        with self.store.transaction():
            for mid, hlc, base, seq in versions:
                self.store.set_sync_version(mid, hlc, base, device, seq)
            self.store.set_sync_value("cursor_event", str(event_cursor))
            self.store.set_sync_value("clock", clock.version())

    def _put_record(self: "Mnemo", mem: Memory, hlc: str, base: str | None, device: str) -> dict[str, Any]:
        state = mem.to_dict()
        state.pop("content_hash", None)
        links = [{"to": r["id"], "kind": r["kind"], "strength": r["strength"]} for r in self.store.relations(mem.id) if r["direction"] == "out"]
        return {"op": "put", "id": mem.id, "hlc": hlc, "base": base, "origin": device, "memory": state,
                "history": self.store.events(mem.id), "links": links}

    @staticmethod
    def _write_segment(folder: Path, device: str, records: list[dict[str, Any]], key: str | None, number: int | None = None) -> str:
        """Write a segment with the next free number (or ``number``: a rewrite) and return its file name."""
        if number is None:
            taken = [n for n in (seg.segment_number(p.name) for p in folder.iterdir()) if n is not None]
            number = max(taken, default=0) + 1
        name = seg.segment_name(number)
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(seg.encode(device, number, records, key=key))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / name)
        return name

    # ------------------------------------------------------------ applying the other devices' segments

    def _pull(self: "Mnemo", root: Path, device: str, clock: seg.Clock, key: str | None, scopes: set[str] | None,
              report: dict[str, Any], purged_texts: set[str], progress: Callable[[int, int], None] | None) -> None:
        applied = self.store.sync_applied()
        todo: list[tuple[str, int, Path]] = []
        for sub in sorted(p for p in root.iterdir() if p.is_dir() and p.name != device and not p.name.startswith(".")):
            for f in sorted(sub.iterdir()):
                n = seg.segment_number(f.name)
                if n is not None and (sub.name, n) not in applied:
                    todo.append((sub.name, n, f))
        for i, (dev, n, path) in enumerate(todo):
            if progress:
                progress(i, len(todo))
            try:
                segment = seg.decode(path.read_bytes(), key=key)
                if segment.device != dev or segment.number != n:
                    raise seg.SegmentError(f"its header names {segment.device}/{segment.number}")
            except (seg.SegmentError, OSError) as exc:
                report["skipped"].append({"file": f"{dev}/{path.name}", "why": str(exc)})
                continue
            links: list[tuple[str, list[dict[str, Any]]]] = []
            new: list[dict[str, Any]] = []
            purges = [r for r in segment.records if r.get("op") == "purge" and isinstance(r.get("id"), str) and isinstance(r.get("hlc"), str)]
            if purges:
                self._apply_purges(purges, purged_texts, report)
            for rec in segment.records:
                if not isinstance(rec.get("hlc"), str) or not isinstance(rec.get("id"), str):
                    continue
                clock.seen(rec["hlc"])
                if rec.get("op") == "put" and isinstance(rec.get("memory"), dict):
                    if scopes is not None and rec["memory"].get("scope") not in scopes:
                        continue
                    if self._apply_put(rec, device, report):
                        new.append(rec)
                    links.append((rec["id"], rec.get("links") or []))
            if new:
                self._insert_new(new)
            with self.store.transaction():
                self._link([(src, out) for src, out in links if out])
                self.store.mark_sync_applied(dev, n, segment.sha256, format_time(utcnow()))
            report["segments_applied"] += 1
            report["records_applied"] += len(segment.records)
        if progress:
            progress(len(todo), len(todo))

    def _link(self: "Mnemo", links: list[tuple[str, list[dict[str, Any]]]]) -> None:
        """Make the links records carry; one whose other end has not arrived yet (its device's
        files come later, or in a later sync) waits in the sync state and is made when it does,
        so the links end the same whatever order the files are applied in. Call inside a transaction."""
        waiting = json.loads(self.store.sync_value("pending_links") or "[]")
        wanted = waiting + [[src, link.get("to"), link.get("kind"), link.get("strength", 0.5)] for src, out in links for link in out
                            if isinstance(link, dict) and isinstance(link.get("to"), str)]
        if not wanted:
            return
        ends = list({e for src, to, _, _ in wanted for e in (src, to)})
        present = self.store.existing_ids(ends)
        gone = {mid for mid, v in self.store.sync_versions(ends).items() if v[3] == -1}
        still = []
        for src, to, kind, strength in wanted:
            if src in present and to in present:
                self.store.add_relation(src, to, str(kind), float(strength))
            elif src not in gone and to not in gone:
                still.append([src, to, kind, strength])
        self.store.set_sync_value("pending_links", json.dumps(still[-100_000:]))

    def _apply_put(self: "Mnemo", rec: dict[str, Any], device: str, report: dict[str, Any]) -> bool:
        """Merge one memory's version into this store; True when it is new here (inserted later, in a batch)."""
        mid, hlc = rec["id"], rec["hlc"]
        v = self.store.sync_versions([mid]).get(mid)
        if v is not None and v[3] == -1:
            return False  # purged here: a purge is final
        local = self.store.get(mid)
        if local is None:
            return v is None  # a version without the memory: purged here before versions were kept
        remote_history = rec.get("history") or []
        history = _union(self.store.events(mid), remote_history)
        local_hlc = v[0] if v else ""
        if hlc > local_hlc:
            if v is not None and v[2] == device and rec.get("base") != v[0]:
                history.append(self._conflict_event(local.to_dict(), v[0], hlc))
                report["conflicts"] += 1
            self._adopt(local, rec)
            with self.store.transaction():
                self.store.replace_events(mid, history)
                self.store.set_sync_version(mid, hlc, rec.get("base"), rec.get("origin") or "?", self.store.memory_seq(mid))
            return False
        if hlc < local_hlc and v is not None and v[2] == device and v[1] != hlc:
            history.append(self._conflict_event(rec["memory"], hlc, local_hlc))
            report["conflicts"] += 1
        with self.store.transaction():
            self.store.replace_events(mid, history)
        return False

    @staticmethod
    def _conflict_event(state: dict[str, Any], lost: str, kept: str) -> dict[str, Any]:
        """The version that lost, kept in the history (``mnemo sync --status`` lists these)."""
        keep = {k: state.get(k) for k in ("content", "type", "scope", "tags", "status")}
        return {"kind": "sync_conflict", "at": format_time(utcnow()), "cause": "sync: a concurrent edit won",
                "data": {"lost": keep, "lost_version": lost, "kept_version": kept}}

    def _adopt(self: "Mnemo", local: Memory, rec: dict[str, Any]) -> None:
        """Make ``local`` the remote version: its fields (re-embedded or with its vector when the
        text changed) and its status."""
        state = rec["memory"]
        checked = self._prepare({**state, "id": local.id})
        fields = {k: getattr(checked, k) for k in STATE_FIELDS if getattr(checked, k) != getattr(local, k)}
        fresh: dict[str, Any] = {}
        if "content" in fields or "metadata" in fields:
            with self.store.transaction():
                self._accept_vectors([rec])
            text = embed_text(checked)
            (h,), _, fresh = self._vectors([text])
            from .._base import text as _text

            fields.update(content_hash=checked.content_hash, embed_hash=h, tokens=_text.index_tokens(text))
        status, superseded_by = state.get("status") or "active", state.get("superseded_by")
        with self._lock, self.store.transaction():
            self._store_vectors(fresh)
            if fields:
                self.store.update_fields(local.id, **fields)
            if status != local.status or superseded_by != local.superseded_by:
                self.store.set_status(local.id, status, superseded_by=superseded_by)

    def _accept_vectors(self: "Mnemo", records: list[dict[str, Any]]) -> None:
        """Keep the shipped vectors that are of this store's model (no re-embedding), claiming the
        model for a store that has none yet, as a first embedding would. Call inside a transaction."""
        dim = int(self.store.get_meta("dim") or 0)
        fresh: dict[str, Any] = {}
        for rec in records:
            vec = rec.get("vector")
            if not isinstance(vec, dict) or vec.get("model") != self.embedder.name:
                continue
            try:
                arr = np.frombuffer(base64.b64decode(vec["b64"]), dtype=np.float32)
            except (ValueError, KeyError, TypeError):
                continue
            if arr.size == 0 or (dim and arr.size != dim) or (fresh and arr.size != len(next(iter(fresh.values())))):
                continue  # another dimension: embedded here instead
            fresh[str(vec.get("hash"))] = arr
        self._store_vectors(fresh)

    def _insert_new(self: "Mnemo", records: list[dict[str, Any]]) -> None:
        """Insert memories new to this store as they were (id, times, status, history), in
        batches; each batch's vectors, rows and sync versions commit together, so a sync killed
        half-way keeps what it inserted and never takes it for this device's own new memories."""
        from .maintenance import _extra_fields

        for start in range(0, len(records), 128):
            part = records[start:start + 128]
            batch = []
            for rec in part:
                state = {**rec["memory"], "history": rec.get("history") or [], "links": []}
                batch.append((self._prepare(state), _extra_fields(state), True))
            with self._lock, self.store.transaction():
                self._accept_vectors(part)
                self._insert_prepared(batch, cause="sync")
                for rec in part:
                    self.store.set_sync_version(rec["id"], rec["hlc"], rec.get("base"), rec.get("origin") or "?",
                                                self.store.memory_seq(rec["id"]))

    def _apply_purges(self: "Mnemo", records: list[dict[str, Any]], purged_texts: set[str], report: dict[str, Any]) -> None:
        """Purge here what another device purged (one purge for the whole segment: each rewrites the file)."""
        here = [self.store.get(r["id"]) for r in records]
        gone = [m for m in here if m is not None]
        purged_texts.update(m.content for m in gone)
        if gone:
            self.purge([m.id for m in gone])
            report["purged"] += len(gone)
        with self.store.transaction():
            for r in records:
                self.store.set_sync_version(r["id"], r["hlc"], None, r.get("origin") or "?", -1)
        purged_texts.update(f"\x00id:{r['id']}" for r in records)

    # ------------------------------------------------------------ erasing purged text from this device's segments

    def _clean_segments(self: "Mnemo", folder: Path, device: str, key: str | None, purged: set[str]) -> int:
        """Rewrite this device's segments without the records of purged memories (found by id,
        or holding a purged text); the memories whose old records went are written again."""
        ids = {p[4:] for p in purged if p.startswith("\x00id:")}
        for mid, (_, _, _, seq) in self.store.sync_versions(list(self._purged_ids())).items():
            if seq == -1:
                ids.add(mid)
        texts = {p for p in purged if not p.startswith("\x00id:")}
        files = sorted(p for p in folder.iterdir() if seg.segment_number(p.name) is not None)
        parsed = []
        for path in files:
            try:
                parsed.append((path, seg.decode(path.read_bytes(), key=key)))
            except (seg.SegmentError, OSError):
                continue
        for _, s in parsed:  # the texts of the purged memories, from their own old records
            texts.update(r["memory"].get("content", "") for r in s.records if r.get("id") in ids and isinstance(r.get("memory"), dict))
        texts.discard("")
        cleaned = 0
        again: set[str] = set()
        for path, s in parsed:
            keep = []
            for r in s.records:
                raw = json.dumps(r, ensure_ascii=False)
                if r.get("op") == "put" and (r.get("id") in ids or any(t in raw for t in texts)):
                    if r.get("id") not in ids:
                        again.add(r["id"])
                    continue
                keep.append(r)
            if len(keep) != len(s.records):
                self._write_segment(folder, device, keep, key, number=s.number)
                cleaned += 1
        if again:
            with self.store.transaction():
                for mid, (hlc, base, origin, _) in self.store.sync_versions(list(again)).items():
                    self.store.set_sync_version(mid, hlc, base, origin, -2)  # written again by the next push
        return cleaned

    def _purged_ids(self: "Mnemo") -> list[str]:
        return [mid for _, mid, _, _ in self.store.events_after(0, ("purged",), 1_000_000)]

    # ------------------------------------------------------------ merging another store

    def merge(self: "Mnemo", other: str | os.PathLike[str], *, key: str | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Merge another store (a file or a PostgreSQL URL; ``key`` for an encrypted file) into
        this one, once. A memory both stores have (the same id) takes the later-updated version,
        with both histories; an active memory new here goes through the write rules of
        ``remember`` (a repeat merges into the memory it repeats, an update supersedes), keeping
        its id, times and history; the rest (forgotten, archived, superseded) comes as it was.
        Links follow. Vectors are reused when both stores use the same model. The other store
        is only read."""
        from .._base.models import STATUSES

        src = type(self)(other, embedder=self.embedder, create=False, key=key, read_only=True, redactor=False)
        try:
            mems = list(src.store.iter_all(STATUSES))
            same_model = src.store.get_meta("embedder") == self.embedder.name
            hashes = src.store.embed_hashes([m.id for m in mems]) if same_model else {}
            counts = {"read": len(mems), "created": 0, "merged": 0, "superseded": 0, "related": 0, "added_as_they_were": 0,
                      "updated": 0, "unchanged": 0}
            links: list[tuple[str, list[dict[str, Any]]]] = []
            for i, mem in enumerate(mems):
                if progress:
                    progress(i, len(mems))
                rec = src._put_record(mem, "", None, "merge")
                blob = src.store.get_embeddings(self.embedder.name, [hashes[mem.id]]).get(hashes[mem.id]) if mem.id in hashes else None
                if blob is not None:
                    rec["vector"] = {"model": self.embedder.name, "hash": hashes[mem.id], "b64": base64.b64encode(blob).decode()}
                links.append((mem.id, rec["links"]))
                self._merge_one(mem, rec, counts)
            present = self.store.existing_ids([s for s, _ in links])
            self._restore_links([(s, out) for s, out in links if s in present and out])
            if progress:
                progress(len(mems), len(mems))
        finally:
            src.close()
        return counts

    def _merge_one(self: "Mnemo", mem: Memory, rec: dict[str, Any], counts: dict[str, int]) -> None:
        local = self.store.get(mem.id)
        if local is not None:
            if mem.updated_at > local.updated_at:
                self._adopt(local, rec)
                counts["updated"] += 1
            else:
                counts["unchanged"] += 1
            with self.store.transaction():
                self.store.replace_events(mem.id, _union(self.store.events(mem.id), rec["history"]))
            return
        with self.store.transaction():
            self._accept_vectors([rec])
        if mem.status != "active":
            from .maintenance import _extra_fields

            state = {**rec["memory"], "history": rec["history"], "links": []}
            self._insert_prepared([(self._prepare(state), _extra_fields(state), True)], cause="merge")
            counts["added_as_they_were"] += 1
            return
        fields = {k: rec["memory"].get(k) for k in ("id", "content", "type", "scope", "tags", "importance", "confidence", "source",
                                                     "source_session", "created_at", "metadata", "expires_at", "pinned")}
        (kept, action), = self.remember_many([{k: v for k, v in fields.items() if v is not None}], cause="merge", dedup=True)
        counts[action if action in counts else "created"] += 1
        with self.store.transaction():  # the other store's history of it, in the memory it became
            self.store.replace_events(kept.id, _union(self.store.events(kept.id), rec["history"]))

    # ------------------------------------------------------------ status

    def sync_status(self: "Mnemo", folder: str | os.PathLike[str], *, key: str | None = None) -> dict[str, Any]:
        """This device, every device's segments in ``folder`` (applied here, or waiting and why),
        and the conflicts sync resolved (the losing version of each is in the memory's history)."""
        root = Path(folder)
        device = self._device()
        applied = self.store.sync_applied()
        sealed = self._segment_key(key)
        devices = []
        for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []:
            numbers = sorted(n for n in (seg.segment_number(f.name) for f in sub.iterdir()) if n is not None)
            waiting = []
            if sub.name != device:
                for n in numbers:
                    if (sub.name, n) in applied:
                        continue
                    try:
                        seg.decode((sub / seg.segment_name(n)).read_bytes(), key=sealed)
                        waiting.append({"segment": n, "why": "not applied yet"})
                    except (seg.SegmentError, OSError) as exc:
                        waiting.append({"segment": n, "why": str(exc)})
            devices.append({"device": sub.name, "this": sub.name == device, "segments": len(numbers),
                            "applied": sum(1 for n in numbers if (sub.name, n) in applied), "waiting": waiting})
        conflicts = [{"memory_id": e["memory_id"], "at": e["at"], **e["data"]} for e in self.store.events_of_kind("sync_conflict", 200)]
        return {"device": device, "folder": str(root), "devices": devices, "conflicts": conflicts}

