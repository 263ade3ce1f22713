"""Copying one store into another (``mnemo migrate``): every memory with its history,
relations and vectors, then the ingested sources and the logs, then a verification.

Written against the Store port only, so it copies between any two backends (SQLite to
PostgreSQL and back, or SQLite to SQLite).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._base import text as _text
from .._base.models import STATUSES, Memory, embed_text
from ..errors import StoreError
from .base import Filters, Store

#: memories per transaction: each batch's existing ids and vectors are fetched together
BATCH = 500


def copy_store(src: Store, dst: Store, *, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Copy every memory (any status) with its history, relations and — when both stores use
    the same embedding model, or the target has none yet — its vectors from ``src`` to ``dst``,
    then verify. Idempotent: memories already in ``dst`` (same id and content hash) are kept,
    so a second run copies nothing; a memory in both with different content is an error.
    The injection log and LLM usage are copied on the first run only (they are append-only
    counters); ingested sources are upserted. Per-session state and jobs are transient and
    not copied."""
    tick = progress or (lambda done, total: None)
    total = src.count(Filters(statuses=STATUSES))
    src_model, dst_model = src.get_meta("embedder"), dst.get_meta("embedder")
    copy_vectors = src_model is not None and dst_model in (None, src_model)
    first_run = not dst.injections(limit=1) and dst.count(Filters(statuses=STATUSES)) == 0
    report: dict[str, Any] = {"from": src.url, "to": dst.url, "memories": total, "copied": 0, "already_there": 0,
                              "events": 0, "relations": 0, "vectors": 0, "sources": 0, "model": src_model,
                              "vectors_copied": copy_vectors}
    batch: list[Memory] = []

    def flush() -> None:
        have = dst.existing_ids([m.id for m in batch])
        hashes = list({_text.text_hash(embed_text(m)) for m in batch})
        vectors = src.get_embeddings(src_model, hashes) if copy_vectors and src_model else {}
        with dst.transaction():
            if vectors and dst.get_meta("embedder") is None:
                dst.set_meta("embedder", src_model)  # type: ignore[arg-type]
                dst.set_meta("dim", src.get_meta("dim") or str(len(next(iter(vectors.values()))) // 4))
            if vectors:
                dim = int(dst.get_meta("dim") or 0)
                dst.put_embeddings(src_model, [(h, len(v) // 4, v) for h, v in vectors.items() if len(v) // 4 == dim])  # type: ignore[arg-type]
                report["vectors"] += len(vectors)
            for mem in batch:
                if mem.id in have:
                    there = dst.get(mem.id)
                    if there is not None and there.content_hash != mem.content_hash:
                        raise StoreError(f"memory {mem.id} differs between {src.url} and {dst.url}; nothing more was copied")
                    report["already_there"] += 1
                    continue
                text = embed_text(mem)
                dst.insert(mem, embed_hash=_text.text_hash(text), tokens=_text.index_tokens(text), cause="migrate")
                events = src.events(mem.id)
                dst.replace_events(mem.id, events)  # as it was, times included, not insert's 'created' event
                report["events"] += len(events)
                for rel in src.relations(mem.id):
                    if rel["direction"] == "out":
                        dst.add_relation(mem.id, rel["id"], rel["kind"], rel["strength"])
                        report["relations"] += 1
                report["copied"] += 1
        batch.clear()

    done = 0
    for mem in src.iter_all():
        batch.append(mem)
        done += 1
        if len(batch) >= BATCH:
            flush()
            tick(done, total)
    if batch:
        flush()
    tick(done, total)
    with dst.transaction():
        for source in src.list_sources():
            dst.put_source(source)
            report["sources"] += 1
        if first_run:
            for row in reversed(src.injections(limit=10**9)):
                dst.log_injection(at=row["at"], session=row["session"], surface=row["surface"], query=row["query"],
                                  memory_ids=row["memory_ids"], data=row["data"])
            for kind, used in src.usage().items():
                dst.add_usage("migrated", kind, calls=used["calls"], tokens=used["tokens"])
        for key in ("generation",):
            value = src.get_meta(key)
            if value is not None and dst.get_meta(key) is None:
                dst.set_meta(key, value)
    report["verified"] = verify_copy(src, dst)
    return report


def verify_copy(src: Store, dst: Store) -> dict[str, int]:
    """Check that every memory of ``src`` is in ``dst`` with the same content hash, and that
    the hash is right for the content; raises :class:`StoreError` naming what differs."""
    checked = 0
    batch: list[Memory] = []

    def check() -> None:
        nonlocal checked
        for mem in batch:
            there = dst.get(mem.id)
            if there is None:
                raise StoreError(f"verification failed: memory {mem.id} is missing in {dst.url}")
            if there.content_hash != mem.content_hash or _text.content_hash(there.content) != there.content_hash \
                    or there.status != mem.status:
                raise StoreError(f"verification failed: memory {mem.id} differs in {dst.url}")
            checked += 1
        batch.clear()

    for mem in src.iter_all():
        batch.append(mem)
        if len(batch) >= BATCH:
            check()
    check()
    if checked != src.count(Filters(statuses=STATUSES)):
        raise StoreError("verification failed: the source changed while it was copied; run migrate again")
    return {"memories": checked, "target_memories": dst.count(Filters(statuses=STATUSES))}
