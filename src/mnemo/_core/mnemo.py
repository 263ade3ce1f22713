"""``Mnemo``: the one core every surface (CLI, MCP, hooks, web, Python) calls.

Each public method is one operation of DESIGN.md's core: remember · recall · forget · restore ·
recent · list · show/get · history · stats · export · import · reindex · doctor.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .._base import text as _text
from .._base.models import (
    GLOBAL_SCOPE,
    MAX_CONTENT_CHARS,
    STATUSES,
    Hit,
    Memory,
    check_content,
    check_metadata,
    check_scope,
    check_tags,
    check_type,
    check_unit,
    embed_text,
    format_time,
    new_id,
    parse_time,
    utcnow,
)
from .._llm.chat import ChatClient
from .._privacy.redact import DETECTORS, Redacted, Redactor
from .._recall import dictionary
from .._recall.embed import Calibration, Embedder, make_embedder
from .._recall.intent import SALIENT_TERMS_TOKENS, asked_types, kind_terms, salient_query
from .._recall.names import PAIR_ROWS, cross_script, paired_forms
from .._recall.rank import Weights, rounded, score_candidates
from .._recall.sequence import named_anchor, with_context
from .._recall.terms import TermStats
from .._recall.vindex import VectorIndex
from .._stores.base import Filters, Store, VectorSearch
from .._stores.open import open_store
from ..errors import InvalidInputError, NotFoundError, StoreError
from .capture import CaptureOps
from .context import ContextOps
from .guard import guard_public
from .ingest import IngestOps
from .lifecycle import LifecycleOps, parse_expiry
from .maintenance import MaintenanceOps
from .sync import SyncOps
from .vectors import VectorOps

#: what an item of ``recall_batch`` may hold
_BATCH_KEYS = frozenset({"qid", "query", "scope", "k", "top_k", "now"})
#: lexical-only ranking needs no model calibration
_NO_CAL = Calibration(floor=0.0, scale=1.0, dense_weight=0.0)
#: candidates each channel contributes before fusion
CANDIDATES = 100
#: memories of the kind a question asks for (``_recall.intent``) added as candidates, most important first
INTENT_CANDIDATES = 20
#: the anchor sentences' vectors per embedder object, shared by the stores of one process that
#: use it (a service or a benchmark opens many; each would embed the same sentences again)
_ANCHORS: dict[tuple[int, str], np.ndarray] = {}


@guard_public  # the arguments every operation shares are checked at the edge (see guard.py)
class Mnemo(VectorOps, MaintenanceOps, LifecycleOps, CaptureOps, IngestOps, ContextOps, SyncOps):
    """A memory store: ``Mnemo("~/notes.db")`` or ``Mnemo("/path/to/store.db", model="use")``.

    ``model`` names the embedder (``e5`` default, ``use``, ``openai:<model>`` with
    ``embed_base_url``); ``embedder`` passes a ready object instead (tests, custom models).
    ``scope`` is the default scope for writes and the project scope that recall adds to
    ``global``. ``create=False`` refuses to create a missing store. ``key`` opens (or creates)
    an encrypted store. ``redactor`` masks secrets and personal data in everything written and
    every query before it is stored, embedded or indexed (``True``: the default detectors;
    a :class:`~mnemo._privacy.redact.Redactor` to configure them; ``False`` to turn redaction off).
    ``chat`` (an OpenAI-compatible endpoint, off by default) judges unclear write-time decisions
    and writes consolidation summaries; without it, rules and extractive summaries are used.
    ``read_only`` opens a store file for reading only (one that cannot be written here, such as
    a read-only mount, is opened that way by itself): reads work, writes raise ``StoreError``.
    """

    def __init__(
        self,
        path_or_url: str | os.PathLike[str],
        *,
        model: str = "e5",
        embedder: Embedder | None = None,
        scope: str = GLOBAL_SCOPE,
        create: bool = True,
        half_life_days: float = 90.0,
        min_score: float | None = None,
        embed_base_url: str | None = None,
        threads: int | None = None,
        key: str | None = None,
        redactor: Redactor | None | bool = True,
        decay_days: float = 90.0,
        chat: ChatClient | None = None,
        read_only: bool = False,
    ):
        self.store: Store = open_store(os.fspath(path_or_url), create=create, key=key, read_only=read_only)
        self.scope = check_scope(scope)
        self.weights = Weights(half_life_days=half_life_days, decay_days=decay_days)
        if min_score is not None:
            self.weights.min_score = float(min_score)
        self._embedder = embedder
        self.redactor: Redactor | None = Redactor() if redactor is True else (redactor or None)
        self.chat = chat
        self._model_name = model
        self._embed_base_url = embed_base_url
        self._threads = threads
        self._index: VectorIndex | None = None
        self._asked_cache: dict[str, tuple[int, float, list[int]]] = {}
        self._terms = TermStats()  # document frequencies of query terms, kept between questions
        self._query_cache: dict[tuple[str, str], np.ndarray] = {}
        self._anchor_vecs: tuple[str, np.ndarray] | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------ plumbing

    def close(self) -> None:
        """Release the store."""
        self.store.close()

    def refresh(self, *, idle: bool = False) -> bool:
        """Catch up with the store's file between the requests of a long-running process (the
        warm service): if the file was replaced under it (``cp other.db memory.db``) the store
        is reopened and what was read from the old file is dropped; True when that happened.
        ``idle`` (after a request) also lets go of the file until the next use, so that a copy
        over it while the process waits never meets the old store's state."""
        with self._lock:
            refresh = getattr(self.store, "refresh", None)  # a database server needs none
            if refresh is None or not refresh(idle=idle):
                return False
            self._index = None  # its rows are the old file's
            self._asked_cache = {}
            self._terms.clear()
            return True

    def __enter__(self) -> "Mnemo":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        return self.store.url

    @property
    def embedder(self) -> Embedder:
        """The embedder, built on first use (loading a model costs time the CLI often need not spend)."""
        if self._embedder is None:
            self._embedder = make_embedder(self._model_name, base_url=self._embed_base_url, threads=self._threads)
        return self._embedder

    # ------------------------------------------------------------ remember

    def remember(
        self,
        content: str,
        *,
        type: str = "note",
        scope: str | None = None,
        tags: Iterable[str] | str | None = None,
        importance: float = 0.5,
        confidence: float = 1.0,
        source: str = "manual",
        source_session: str | None = None,
        created_at: str | datetime | None = None,
        metadata: dict[str, Any] | None = None,
        id: str | None = None,
        expires: str | datetime | None = None,
        pinned: bool = False,
        dedup: bool = True,
    ) -> Memory:
        """Save one memory and return it (or the memory it was merged into).

        With ``dedup`` (conversational writes), a repeat or near-repeat in the same scope is
        merged into the existing memory, a similar one is linked ``related``, and one that
        replaces an existing statement supersedes it (see ``mnemo._core.lifecycle``). ``expires`` is
        a duration (``30d``) or a date after which it is not recalled until confirmed."""
        return self.remember_many(
            [
                dict(content=content, type=type, scope=scope, tags=tags, importance=importance, confidence=confidence,
                     source=source, source_session=source_session, created_at=created_at, metadata=metadata, id=id,
                     expires=expires, pinned=pinned)
            ],
            dedup=dedup,
        )[0][0]

    def remember_many(self, records: Sequence[dict[str, Any]], *, cause: str = "remember", dedup: bool = True, _merge_exact: bool = True) -> list[tuple[Memory, str]]:
        """Save several memories in one transaction (batch embedding). Returns ``(memory, action)``
        pairs; action is ``created``, ``merged`` (a repeat: the memory returned is the existing
        one), ``related`` (created and linked to similar memories) or ``superseded`` (created, and
        the memory it replaces is now superseded). An exact repeat is always merged; the other
        decisions only happen with ``dedup``."""
        prepared = [self._prepare(r) for r in records]
        out: list[tuple[Memory, str]] = []
        verdicts: dict[str, Any] = {}

        def prejudge(vectors: list[np.ndarray]) -> None:  # an LLM judge (when configured), before the write lock
            verdicts.update(self._prejudge(prepared, vectors))

        with self._writing(prepared, cause=cause, before=prejudge if dedup else None) as rows:
            for mem, vector, insert in rows:
                existing = self.store.find_by_hash(mem.content_hash, mem.scope) if _merge_exact else None
                if existing is not None:
                    out.append((self._merge_into(existing, mem, similarity=1.0, cause="exact repeat"), "merged"))
                    continue
                if self.store.pk_of(mem.id) is not None:
                    raise InvalidInputError(f"a memory with id {mem.id} already exists")
                decision = None
                if dedup:
                    decision = self._decide(mem, vector, verdicts)
                    if decision.action == "merged" and decision.target is not None:
                        out.append((self._merge_into(decision.target, mem, similarity=decision.similarity, cause="near repeat"), "merged"))
                        continue
                insert()
                if decision is not None:
                    self._apply_decision(decision, mem)
                out.append((mem, decision.action if decision is not None else "created"))
        return out

    @contextmanager
    def _writing(self, mems: Sequence[Memory], *, cause: str, before: Callable[[list[np.ndarray]], None] | None = None,
                 defer: bool = False) -> Iterator[list[tuple[Memory, np.ndarray | None, Callable[[], None]]]]:
        """The one write path every write takes (save, import, ingest, auto, MCP, hooks): the
        memories arrive prepared (checked and redacted by :meth:`_prepare`); here they are embedded
        (through the cache, each distinct text once), their full-text tokens made, then one
        transaction stores the new vectors and yields ``(memory, vector, insert)`` for each, so
        the caller decides per memory (merge, skip, supersede) and calls ``insert()`` to write it.
        ``before`` sees the vectors first, outside the transaction (an LLM judge is slow).
        ``defer``: texts not embedded before are written without a vector (searchable by their
        words at once; a bulk import's vectors are filled in the background) and yield None."""
        self._check_model()
        with self._lock:
            texts = [embed_text(m) for m in mems]
            hashes, vectors, fresh = self._vectors(texts, defer=defer) if texts else ([], {}, {})
            tokens = [_text.index_tokens(t) for t in texts]
            if before is not None:
                before([vectors[h] for h in hashes])
            with self.store.transaction():
                self._store_vectors(fresh)
                if defer and self.embedder.dim and any(h not in vectors for h in hashes):
                    self._claim_model(self.embedder.dim)  # texts left for later: the store is this model's, as with a first vector

                def inserter(mem: Memory, h: str, tok: str) -> Callable[[], None]:
                    return lambda: self.store.insert(mem, embed_hash=h, tokens=tok, cause=cause)

                yield [(mem, vectors.get(h), inserter(mem, h, tok)) for mem, h, tok in zip(mems, hashes, tokens)]

    def _clean_query(self, query: str) -> str:
        """A query is embedded (perhaps by an endpoint) like any text, so it is redacted too."""
        return query if self.redactor is None else self.redactor.redact(query).text.strip()

    def redact(self, text: str) -> Redacted:
        """What redaction would do to ``text`` (nothing is stored): the masked text and findings."""
        return self.redact_with(self.redactor or False, text)

    @staticmethod
    def redact_with(redactor: Redactor | bool, text: str) -> Redacted:
        """Redact ``text`` with a given redactor (``False``: none) without opening a store."""
        if not isinstance(text, str):
            raise InvalidInputError("text must be a string")
        if redactor is True:
            redactor = Redactor()
        return (redactor or Redactor(disabled=DETECTORS)).redact(text)

    def _scrub(self, text: str) -> str:
        """``text`` redacted as a whole, before anything cuts it: a sentence split or a chunk
        boundary inside a key, a quoted password or a ``<private>`` span would leave part of it
        raw (a PEM key cut into sentences kept 18 of its 50 lines). Unchanged when redaction is off."""
        return text if self.redactor is None or not text else self.redactor.redact(text).text

    def _clean_tags(self, tags: Any) -> list[str]:
        """Tags checked and redacted (a tag is stored beside the text; one can hold a phone number)."""
        return list(dict.fromkeys(s for tag in check_tags(tags) if (s := self._scrub(tag).strip())))

    def _scrub_fields(self, value: Any) -> Any:
        """Every string inside a metadata value (keys included) redacted: an imported record's
        metadata, a chat export's sender names and a file's title sit beside the text, in the
        same store file."""
        if self.redactor is None:
            return value
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):
            return {self._scrub(str(k)): self._scrub_fields(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrub_fields(v) for v in value]
        return value

    def _redacted_prefix(self, prefix: str) -> str:
        """An embedding prefix, redacted. Every chunk of a document section shares its prefix, so
        each distinct one is redacted once (memo tied to the current redactor)."""
        if self.redactor is None:
            return prefix
        owner, memo = getattr(self, "_prefix_memo", (None, {}))
        if owner is not self.redactor or len(memo) > 4096:
            owner, memo = self.redactor, {}
            self._prefix_memo = (owner, memo)
        if prefix not in memo:
            memo[prefix] = self.redactor.redact(prefix).text
        return memo[prefix]

    def _prepare(self, r: dict[str, Any]) -> Memory:
        content = check_content(r.get("content"))
        metadata = self._scrub_fields(check_metadata(r.get("metadata")))
        if self.redactor is not None:
            red = self.redactor.redact(content)
            kinds = {**_masked_before(content), **red.kinds}
            if kinds:
                metadata = {**metadata, "redacted": kinds}  # what kinds were masked, never the values
            if red.findings:
                content = red.text.strip()
                if not content:
                    raise InvalidInputError("nothing is left to remember once the <private> parts are removed")
        prefix = r.get("embed_prefix")
        if prefix:
            # a document chunk is embedded and indexed under its title and heading path, while
            # the stored content stays the original text (see mnemo._ingest.chunk)
            if not isinstance(prefix, str):
                raise InvalidInputError("embed_prefix must be a string")
            metadata = {**metadata, "embed_prefix": self._redacted_prefix(prefix)}
        now = utcnow()
        created = parse_time(r["created_at"], field_name="created_at") if r.get("created_at") else now
        mid = r.get("id")
        if mid is not None and (not isinstance(mid, str) or not mid.strip() or len(mid) > 200):
            raise InvalidInputError(f"id {mid!r} must be a non-empty string of at most 200 characters")
        mem = Memory(
            id=(mid.strip() if mid else new_id(created)),
            content=content,
            type=check_type(r.get("type")),
            scope=check_scope(r.get("scope"), self.scope),
            tags=self._clean_tags(r.get("tags")),
            importance=check_unit(0.5 if r.get("importance") is None else r["importance"], "importance"),
            confidence=check_unit(1.0 if r.get("confidence") is None else r["confidence"], "confidence"),
            source=self._scrub(str(r.get("source") or "manual")),
            source_session=self._scrub(r["source_session"]) if isinstance(r.get("source_session"), str) else r.get("source_session"),
            created_at=format_time(created),
            updated_at=format_time(now),
            content_hash=_text.content_hash(content),
            metadata=metadata,
            pinned=bool(r.get("pinned")),
            stored_at=format_time(now),  # what the store writes; the answer to a save says it too
        )
        if r.get("expires"):
            mem.expires_at, span = parse_expiry(r["expires"], now)
            if span:
                mem.metadata = {**mem.metadata, "expires_after": span}
        return mem

    # ------------------------------------------------------------ recall

    def _visible_scopes(self, scope: str | None) -> list[str] | None:
        s = (scope or self.scope).strip()
        if s == "all":
            return None
        s = check_scope(s)
        return [s] if s == GLOBAL_SCOPE else [s, GLOBAL_SCOPE]

    def _filters(
        self,
        *,
        scope: str | None,
        types: Sequence[str] | str | None,
        tags: Sequence[str] | str | None,
        since: str | datetime | None,
        until: str | datetime | None,
        statuses: Sequence[str] = ("active",),
    ) -> Filters:
        if isinstance(types, str):
            types = [t for t in types.split(",") if t.strip()]
        for s in statuses:
            if s not in STATUSES:
                raise InvalidInputError(f"unknown status {s!r}; choose from {', '.join(STATUSES)}")
        return Filters(
            scopes=self._visible_scopes(scope),
            types=[check_type(t) for t in types] if types else None,
            tags=check_tags(tags) or None,
            since=format_time(parse_time(since, field_name="since")) if since else None,
            until=format_time(parse_time(until, field_name="until")) if until else None,
            statuses=tuple(statuses),
        )

    def _fresh_index(self) -> VectorIndex:
        """The vector index, brought up to date with writes from any process (a store that
        searches vectors itself, such as PostgreSQL's pgvector, hands out its own)."""
        name = self.embedder.name
        if isinstance(self.store, VectorSearch):
            return self.store.vector_index(name)  # type: ignore[return-value]
        generation = self.store.get_meta("generation") or "0"
        idx = self._index
        if idx is None or idx.model != name or idx.generation != generation:
            dim = int(self.store.get_meta("dim") or self.embedder.dim or 0)
            idx = VectorIndex(name, dim)
            idx.generation = generation
            self._index = idx
        if self.store.max_seq() > idx.seq:
            idx.apply(self.store.vector_rows(name, idx.seq))
        return idx

    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        scope: str | None = None,
        types: Sequence[str] | str | None = None,
        tags: Sequence[str] | str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        now: str | datetime | None = None,
        min_similarity: float | None = None,
        min_score: float | None = None,
        mode: str = "hybrid",
        explain: bool = False,
        touch: bool = True,
        include_superseded: bool = False,
        include_archived: bool = False,
        include_expired: bool = False,
        expand: bool = False,
        _qvec: np.ndarray | None = None,
    ) -> list[Hit]:
        """Find the memories relevant to ``query``: hybrid full-text + vector search, fused and
        scored (see ``mnemo._recall.rank``). Returns at most ``top_k`` hits above the relevance floor.
        ``touch=False`` does not count the recall as an access (benchmarks, scripts). Superseded,
        archived and expired memories are left out unless asked for; ``expand`` adds each hit's
        ``related`` memories after it, each marked with ``via`` (the hit it is linked to) and
        ``link`` (the link's kind and strength)."""
        if mode not in ("hybrid", "vector", "fts"):
            raise InvalidInputError(f"mode must be hybrid, vector or fts, not {mode!r}")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query is empty")
        if len(query) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"query is {len(query):,} characters; at most {MAX_CONTENT_CHARS:,}")
        if not 1 <= int(top_k) <= 1000:
            raise InvalidInputError("top_k must be between 1 and 1000")
        statuses = ("active",) + (("superseded",) if include_superseded else ()) + (("archived",) if include_archived else ())
        filters = self._filters(scope=scope, types=types, tags=tags, since=since, until=until, statuses=statuses)
        query = self._clean_query(query)
        if not query:
            return []  # the query was all <private>: nothing may be searched for
        words = salient_query(query, SALIENT_TERMS_TOKENS)  # what the full-text channel searches for
        query = salient_query(query)  # a pasted log with a question: the question (and the instruction)
        now_dt = parse_time(now, field_name="now") if now else utcnow()
        if not include_expired:
            filters.alive_at = format_time(now_dt)
        window = _time_window(query, now_dt.astimezone())  # the user's own day and week boundaries
        asked = asked_types(query)  # 技术栈 → project context: a preference in the ranking, not a filter
        projects = [s for s in filters.scopes or () if s != "global"]
        home = projects[0] if len(projects) == 1 and "global" in (filters.scopes or ()) else None
        k_cand = max(CANDIDATES, top_k * 4)
        cosines: dict[int, float] = {}
        bm25: dict[int, float] = {}
        baseline = 0.0
        n_terms = 0
        named: frozenset[int] = frozenset()
        with self._lock:
            if mode != "fts":
                self._check_model()
                idx = self._fresh_index()
                qvec = _qvec if _qvec is not None else self._query_vector(query)
                baseline = float(np.mean(self._anchors() @ qvec))
                scan = idx.start_search(qvec, k_cand, filters)  # on a large store it runs beside the full-text search
            try:
                if mode != "vector":
                    terms, phrases = _text.query_terms(words)
                    n_terms = len(terms) + len(phrases)  # translations widen the net, not the norm
                    paired = paired_forms(words, terms, lambda forms: self._texts_naming(forms, filters), self._doc_freqs)  # 友盟（Umeng）
                    terms = self._terms.drop_common(self.store, terms)  # see _recall/terms.py
                    extra = kind_terms(asked)  # 技术栈 → 框架, 数据库, …
                    names, name_phrases = cross_script(words, self._doc_freqs)  # 张伟 ⇄ Zhang Wei, as the store spells them
                    looked_up, looked_up_names = dictionary.translate(terms)  # beyond the glossary: 宝安 ⇄ Bao'an, 提单 ⇄ bill of lading
                    looked_up = self._terms.drop_common(self.store, looked_up, keep_rarest=False)  # "center" in a third of the rows
                    names, name_phrases = names + paired[0] + _text.name_translations(terms) + looked_up_names, name_phrases + paired[1]  # 支付宝 ⇄ Alipay
                    match = _text.fts_match_expression(list(dict.fromkeys(terms + _text.translations(terms) + looked_up + extra + names)),
                                                       phrases + name_phrases)
                    if match:
                        bm25 = dict(self.store.fts_search(match, filters, k_cand))
                    if names or name_phrases:  # the memories that name them: see rank.py on cross-script names
                        named = self._naming(names, name_phrases, filters, k_cand)
            finally:
                if mode != "fts":
                    cosines = dict(scan())  # every filter applied inside the scan
            if asked and mode != "fts":
                # memories of the asked-for kind are candidates even when no word of the question is
                # in them ("技术栈是什么" / "项目使用 FastAPI + PostgreSQL"): the most important few
                kinds = [t for t in asked if not filters.types or t in filters.types]
                typed = replace(filters, types=kinds) if kinds else None
                for pk in self._asked_candidates(typed, idx) if typed else ():
                    cosines.setdefault(pk, None)  # type: ignore[arg-type]  # filled below
            if (mode == "hybrid" and bm25) or None in cosines.values():  # lexical hits and asked-for kinds lack a cosine
                missing = [pk for pk in {*bm25, *cosines} if cosines.get(pk) is None]
                cosines.update(idx.similarity(qvec, missing))
            # score on a narrow projection; only the winners become Memory objects
            rows = self.store.scoring_rows(list({*cosines, *bm25}))  # both channels applied the filters
        scored = score_candidates(
            rows, cosines, bm25, mode=mode, calibration=self.embedder.calibration if mode != "fts" else _NO_CAL,
            baseline=baseline, n_terms=n_terms, now=now_dt, weights=self.weights, window=window, explain=explain,
            asked=asked, home=home, named=named,
        )
        floor = self.weights.min_score if min_score is None else float(min_score)
        with self._lock:  # the turns and sections around the best hits (see _recall/sequence.py)
            scored = with_context(scored, floor, self.store.sequence_positions,
                                  lambda source, session, chunks: self.store.sequence_members(source, session, chunks, filters))
        scored = [s for s in scored if s.score >= floor and (min_similarity is None or (s.similarity or -1.0) >= min_similarity)]
        scored = scored[: int(top_k)]
        memories = self.store.get_many_by_pk([s.pk for s in scored] + [s.explain["context_of"] for s in scored if s.explain and "context_of" in s.explain])
        hits = [Hit(memory=memories[s.pk], score=s.score, similarity=s.similarity, explain=rounded(named_anchor(s.explain, memories)))
                for s in scored if s.pk in memories]
        if expand:
            hits = self._expand(hits, filters)
        if touch and hits:
            self._touch([h.memory.id for h in hits])
        return hits

    def _naming(self, terms: list[str], phrases: list[str], filters: Filters, limit: int) -> frozenset[int]:
        """The memories (pks) that hold one of ``terms`` or ``phrases`` as words in a row. A
        one-word form is what the full-text search matched; a longer one is checked on the
        memory's tokens, since PostgreSQL's full-text search matches a phrase by any of its words
        (and re-tokenising every candidate for every name, glossary names included, cost the
        hot path for nothing)."""
        words = lambda t: " " + " ".join(re.findall(r"\w+", t)) + " "  # noqa: E731 - as the index splits them: pangu-weather
        single = [t for t in [*terms, *phrases] if words(t).count(" ") == 2]
        several = [t for t in [*terms, *phrases] if words(t).count(" ") > 2]

        def search(forms: list[str]) -> list[int]:
            match = _text.fts_match_expression(forms, []) if forms else None
            return [pk for pk, _ in self.store.fts_search(match, filters, limit)] if match else []

        named = set(search(single))
        wanted = [words(t) for t in several]
        named.update(pk for pk, mem in self.store.get_many_by_pk([pk for pk in search(several) if pk not in named]).items()
                     if any(w in words(_text.index_tokens(mem.content)) for w in wanted))
        return frozenset(named)

    def _texts_naming(self, words: list[str], filters: Filters) -> list[str]:
        """The texts of a few memories (within ``filters``) that contain any of ``words``."""
        match = _text.fts_match_expression(words, [])
        pks = [pk for pk, _ in self.store.fts_search(match, filters, PAIR_ROWS)] if match else []
        return [mem.content for mem in self.store.get_many_by_pk(pks).values()]

    def _asked_candidates(self, filters: Filters, idx: Any) -> list[int]:
        """The most important memories of the asked-for kinds (their pks). The in-memory index
        holds every column this needs; a store that searches vectors itself (PostgreSQL) sorts
        them, and the answer is kept until the store changes or a minute passes (expiry moves
        with the clock): sorting every memory of a kind took ~8 ms a query at 10k memories."""
        if isinstance(idx, VectorIndex):
            return idx.most_important(filters, INTENT_CANDIDATES)
        key = repr((filters.types, filters.scopes, filters.statuses, filters.tags, filters.since, filters.until))
        version, now = self.store.max_seq(), time.monotonic()
        cached = self._asked_cache.get(key)
        if cached is None or cached[0] != version or now - cached[1] > 60:
            found = [self.store.pk_of(m.id) for m in self.store.list(filters, order="importance DESC", limit=INTENT_CANDIDATES)]
            cached = (version, now, [pk for pk in found if pk is not None])
            self._asked_cache = {key: cached}  # one query shape at a time is what recall repeats
        return cached[2]

    def _expand(self, hits: list[Hit], filters: Filters) -> list[Hit]:
        """Each hit followed by its related memories (visible ones only), scored by link strength."""
        out: list[Hit] = []
        seen = {h.memory.id for h in hits}
        for hit in hits:
            out.append(hit)
            for rel in self.store.relations(hit.memory.id):
                if rel["kind"] != "related" or rel["id"] in seen:
                    continue
                other = self.store.get(rel["id"])
                if other is None or other.status not in filters.statuses or (filters.scopes is not None and other.scope not in filters.scopes):
                    continue
                seen.add(other.id)
                out.append(Hit(memory=other, score=hit.score * rel["strength"], similarity=None, via=hit.memory.id,
                               link={"kind": rel["kind"], "strength": rel["strength"]}))
        return out

    def _doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        """The store's ``doc_freqs``, remembered until the store changes (``_recall/terms.py``):
        the names of a query are spelt many ways, and a warm process asks for the same few again."""
        return self._terms.doc_freqs(self.store, terms)

    def recall_batch(self, items: Iterable[dict[str, Any]], *, top_k: int = 10, **defaults: Any) -> list[dict[str, Any]]:
        """Run many recalls at once (query vectors embedded in one batch); never counts as access.

        Each item is ``{"qid", "query", "scope", "k" (or "top_k"), "now"}`` (all but ``query``
        optional; any other key is an error, not silently ignored); each result is ``{"qid",
        "query", "results": [hit dicts]}`` in input order."""
        rows = list(items)
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("query"), str) or not row["query"].strip():
                raise InvalidInputError(f"batch item {i + 1} has no query")
            unknown = set(row) - _BATCH_KEYS
            if unknown:
                raise InvalidInputError(f"batch item {i + 1}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                                        f"the keys are {', '.join(sorted(_BATCH_KEYS))}")
            k = row.get("k", row.get("top_k"))
            if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000):
                raise InvalidInputError(f"batch item {i + 1}: k must be a whole number from 1 to 1000, not {k!r:.40}")
        qvecs: list[np.ndarray | None] = [None] * len(rows)
        if defaults.get("mode", "hybrid") != "fts" and rows:
            self._check_model()
            for start in range(0, len(rows), 64):
                part = rows[start : start + 64]
                vecs = self._embed([salient_query(self._clean_query(r["query"])) or "-" for r in part], query=True)  # what recall embeds
                for j in range(len(part)):
                    qvecs[start + j] = vecs[j]
        out = []
        for i, (row, vec) in enumerate(zip(rows, qvecs)):
            hits = self.recall(
                row["query"], top_k=int(row.get("k") or row.get("top_k") or top_k), scope=row.get("scope", defaults.get("scope")),
                now=row.get("now", defaults.get("now")), touch=False, _qvec=vec,
                **{k: v for k, v in defaults.items() if k not in ("scope", "now")},
            )
            out.append({"qid": row.get("qid", str(i + 1)), "query": row["query"], "results": [h.to_dict() for h in hits]})
        return out

    def _anchors(self) -> np.ndarray:
        """Vectors of the unrelated anchor sentences for this model (cached in the store)."""
        name = self.embedder.name
        shared = (id(self.embedder), name)  # the same embedder object: another store of this process has them
        if self._anchor_vecs is None and shared in _ANCHORS:
            self._anchor_vecs = (name, _ANCHORS[shared])
        if self._anchor_vecs is None or self._anchor_vecs[0] != name:
            texts = [t for t in (_text.DATA / "anchors.txt").read_text("utf-8").splitlines() if t.strip()]
            hashes = [_text.text_hash("anchor:" + t) for t in texts]
            cached = self.store.get_embeddings(name, hashes)
            if len(cached) < len(hashes):
                vecs = self._embed(texts, query=False)
                try:
                    with self.store.transaction():
                        self.store.put_embeddings(name, [(h, vecs.shape[1], v.tobytes()) for h, v in zip(hashes, vecs)])
                except StoreError:  # a read-only store still works, it just recomputes next time
                    pass
            else:
                vecs = np.vstack([np.frombuffer(cached[h], np.float32) for h in hashes])
            self._anchor_vecs = (name, vecs)
            _ANCHORS[shared] = vecs
        return self._anchor_vecs[1]

    def _touch(self, ids: list[str]) -> None:
        try:
            with self.store.transaction():
                self.store.touch(ids, format_time(utcnow()))
        except Exception:  # an access count is not worth failing a search over (e.g. read-only file)
            pass

    # ------------------------------------------------------------ lookups and lifecycle

    def get(self, memory_id: str) -> Memory:
        """The memory with this id (any status), or :class:`NotFoundError`. A unique prefix of
        at least 8 characters is enough (``mem_140fdde8`` for ``mem_140fdde8_20261201_093000``),
        as with git's short hashes; an ambiguous one is an error that lists the candidates."""
        wanted = memory_id.strip()
        mem = self.store.get(wanted)
        if mem is None and len(wanted) >= 8:
            found = self.store.ids_with_prefix(wanted, 6)
            if len(found) > 1:
                raise InvalidInputError(f"{wanted} is the start of several ids ({', '.join(found[:5])}"
                                        f"{', …' if len(found) > 5 else ''}); give more of it")
            mem = self.store.get(found[0]) if found else None
        if mem is None:
            raise NotFoundError(f"no memory with id {memory_id}")
        return mem

    def forget(self, memory_id: str, *, cause: str = "forget") -> Memory:
        """Soft-delete: the memory stops being recalled; ``restore`` brings it back."""
        with self.store.transaction():
            mem = self.get(memory_id)
            if mem.status != "deleted":
                self.store.set_status(mem.id, "deleted")
                self.store.add_event(mem.id, "deleted", cause, {"from": mem.status})
        return self.get(mem.id)

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every recorded event of a memory, oldest first (for a purged memory: its tombstone)."""
        events = self.store.events(memory_id.strip())
        if not events:
            events = self.store.events(self.get(memory_id).id)  # a prefix; NotFoundError for an unknown id
        return events

    def list(
        self,
        *,
        scope: str | None = "all",
        types: Sequence[str] | str | None = None,
        tags: Sequence[str] | str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        statuses: Sequence[str] = ("active",),
        limit: int = 50,
        offset: int = 0,
    ) -> list[Memory]:
        """Memories matching the filters, newest first (``scope='all'`` by default)."""
        filters = self._filters(scope=scope, types=types, tags=tags, since=since, until=until, statuses=statuses)
        return self.store.list(filters, limit=limit, offset=offset)

    def recent(self, *, days: float = 7, limit: int = 20, scope: str | None = None, now: str | datetime | None = None) -> list[Memory]:
        """Memories created in the last ``days`` days, newest first (current scope plus global)."""
        now_dt = parse_time(now) if now else utcnow()
        return self.list(scope=scope or self.scope, since=now_dt - timedelta(days=days), limit=limit)

    # ------------------------------------------------------------ stats

    def stats(self, *, now: str | datetime | None = None) -> dict[str, Any]:
        """Totals (active memories), last 7 days, by type/scope/status, store size, model."""
        now_dt = parse_time(now) if now else utcnow()
        active = Filters()
        week = Filters(since=format_time(now_dt - timedelta(days=7)))
        everything = Filters(statuses=STATUSES)
        model = self.store.get_meta("embedder")
        return {
            "path": self.path,
            "total": self.store.count(active),
            "last_7_days": self.store.count(week),
            "by_type": self.store.group_count("type", active),
            "by_scope": self.store.group_count("scope", active),
            "by_status": self.store.group_count("status", everything),
            "all_records": self.store.count(everything),
            "store_bytes": self.store.size_bytes(),
            "model": model,
            "dim": int(self.store.get_meta("dim") or 0) or None,
            "vectors": self.store.count_embeddings(),
            # memories still waiting for their vector (a bulk import leaves them to the warm service)
            "vectors_pending": self.vectors_pending() if model == self.embedder.name else None,
            "schema_version": self.store.schema_version,
            # LLM calls and tokens spent (capture extraction and others), today and over all days
            "llm_usage": {"today": self.store.usage(format_time(now_dt)[:10]), "all_days": self.store.usage()},
        }





def _time_window(query: str, now: datetime) -> tuple[float, float] | None:
    try:
        from .._recall.timeparse import find_time_window
    except ImportError:  # pragma: no cover
        return None
    w = find_time_window(query, now)
    return None if w is None else (w.start.timestamp(), w.end.timestamp())


def _masked_before(text: str) -> dict[str, int]:
    """The kinds masked in ``text`` before it reached :meth:`Mnemo._prepare`, read from the
    placeholders it carries: a document or a conversation is redacted whole, before it is cut
    into chunks or statements, so the findings of that pass are not at hand per piece."""
    if "[" not in text:
        return {}
    from .._privacy.redact import _PLACEHOLDERS

    found: dict[str, int] = {}
    for kind, names in {**_PLACEHOLDERS, "secret": ("[SECRET]", "[SECRET]")}.items():
        n = sum(text.count(name) for name in set(names) if name)
        if n:
            found[kind] = n
    return found
