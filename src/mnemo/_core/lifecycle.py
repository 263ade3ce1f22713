"""Lifecycle of memories: write-time dedup / related links / supersede, edit, undo, expiry, decay
and archive. A mixin of :class:`mnemo.Mnemo`, kept apart to keep modules small.

Nothing here deletes: merges keep the merged text in the history (so they can be undone),
superseded and archived memories stay in the store, and ``restore`` reverts a memory's last
lifecycle step. ``purge`` (in ``maintenance``) is the only hard delete.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base import text as _text
from .._base.models import Memory, check_scope, check_type, check_unit, embed_text, format_time, parse_duration, parse_time, utcnow
from .._stores.base import Filters
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from .mnemo import Mnemo

#: events that change a memory and that ``restore`` can revert, newest first wins
_UNDOABLE = ("merged", "updated")
_UNDONE = ("unmerged", "reverted", "restored")
#: the steps ``changes`` lists: those that hide, replace or alter what a memory says, and the
#: status each leaves the memory in (None: it stays active)
_CHANGES = {"merged": None, "updated": None, "superseded": "superseded", "archived": "archived", "deleted": "deleted"}
#: neighbours examined per write
NEIGHBOURS = 5
#: sources of ingested document chunks (``ingest`` manages their versions itself)
_DOCUMENT_SOURCES = ("file:", "url:", "chat:")


@dataclass
class Decision:
    """What a conversational write does with a new memory, given its nearest neighbours."""

    action: str  # created · merged · related · superseded
    target: Memory | None = None
    similarity: float | None = None
    detail: str = ""
    related: list[tuple[Memory, float]] | None = None
    verdict: str | None = None  # the LLM judge's answer, when it was asked
    judged: str | None = None  # the neighbour it was asked about
    conflict_with: Memory | None = None  # a possible conflict the rules could not settle (listed by review)


def parse_expiry(value: str | datetime | None, now: datetime) -> tuple[str | None, int | None]:
    """``30d`` / ``2w`` / an ISO date → ``(expires_at, seconds_if_relative)``."""
    if value is None or value == "":
        return None, None
    if isinstance(value, str) and value.strip()[-1:].lower() in "mhdw" and value.strip()[:-1].isdigit():
        delta = parse_duration(value)
        return format_time(now + delta), int(delta.total_seconds())
    try:
        return format_time(parse_time(value, field_name="expires")), None
    except InvalidInputError:
        raise InvalidInputError(f"expires {value!r} must be a duration (30d, 12h, 2w) or a date (2026-12-31)") from None


class LifecycleOps:
    """decide · merge · supersede · edit · restore · review · confirm · gc."""

    # ------------------------------------------------------------ write-time decisions

    def _decide(self: "Mnemo", mem: Memory, vec: np.ndarray, verdicts: dict[tuple[str, str], str] | None = None) -> Decision:
        """Compare a new memory with its nearest active neighbours in the same scope (inside the
        write transaction, so concurrent writers see each other), by the pair rules of
        :mod:`mnemo._lifecycle.pairs`: never merge or supersede across two subjects of one template; merge
        only what adds nothing; supersede only a same-subject change the conflict rules see;
        flag what they suspect but cannot place as a possible conflict (kept, linked, listed by
        ``review``); link only above the model's calibrated margin.

        Where the rules cannot tell, the configured LLM's verdict decides. It is asked before the
        transaction (:meth:`_prejudge`) so a slow endpoint never holds the store's write lock;
        ``verdicts`` maps (new id, neighbour id) to its answer. Called with ``verdicts=None``
        outside a transaction, this asks the LLM itself and records the answer there."""
        from .._lifecycle.pairs import adds_nothing, diff, other_facts, other_subject, replaces, shares_topic

        idx = self._fresh_index()
        cal = self.embedder.calibration
        found_n = idx.search(vec, NEIGHBOURS, Filters(scopes=[mem.scope], statuses=("active",)))
        if not found_n:
            return Decision("created")
        margins = self._margins(vec, idx.vectors([pk for pk, _ in found_n]))
        neighbours = [(pk, cos) for pk, cos in found_n if margins.get(pk, -1.0) >= cal.candidate]
        found = self.store.get_many_by_pk([pk for pk, _ in neighbours])
        close = [(found[pk], cos, margins[pk]) for pk, cos in neighbours if pk in found and not _expired(found[pk])]
        linked: list[tuple[Memory, float]] = []
        judgeable: list[tuple[Memory, float]] = []  # what the LLM judge may be asked about: nothing the rules ruled out
        suspect: tuple[Memory, float, str] | None = None
        for rank, (old, cos, margin) in enumerate(close):
            d = diff(old.content, mem.content)
            if other_subject(old.content, mem.content, d):
                continue  # two subjects of one template: never merged, replaced or linked
            on_topic = margin >= cal.link and shares_topic(old.content, mem.content)
            if old.source.startswith(_DOCUMENT_SOURCES) or mem.source.startswith(_DOCUMENT_SOURCES):
                if on_topic:  # a chunk of a document holds many statements: linked, never merged or replaced
                    linked.append((old, cos))
                continue
            judgeable.append((old, cos))
            change = replaces(old.content, mem.content, d, close=margin >= cal.link)
            if change is not None:
                kept = other_facts(old.content, mem.content)
                if change[1] and kept is None:
                    return Decision("superseded", old, cos, change[0])
                suspect = suspect or (old, cos, change[0] + (f" (the old one also says: {kept})" if kept else ""))
            elif rank == 0 and margin >= cal.merge and adds_nothing(old.content, mem.content, d):
                return Decision("merged", old, cos, "adds nothing")
            if on_topic:
                linked.append((old, cos))
        if suspect is not None:
            old, cos, detail = suspect
            related = linked if any(m.id == old.id for m, _ in linked) else [(old, cos), *linked]
            rules = Decision("related", old, cos, f"possible conflict: {detail}", related=related, conflict_with=old)
        elif linked:
            rules = Decision("related", linked[0][0], linked[0][1], related=linked)
        else:
            rules = Decision("created")
        if self.chat is not None and judgeable and (suspect or linked):  # the rules cannot tell: the configured LLM decides
            if verdicts is None:
                return self._judge(mem, judgeable, rules)
            relation = verdicts.get((mem.id, judgeable[0][0].id))
            if relation is not None and relation.startswith("unavailable"):
                return replace(rules, detail=f"judge {relation}; rules decided" + (f": {rules.detail}" if rules.detail else ""))
            if relation is not None:
                return _verdict(relation, judgeable, linked)
        return rules

    def _margins(self: "Mnemo", vec: np.ndarray, others: dict[int, np.ndarray]) -> dict[int, float]:
        """The calibrated similarity of a new memory to each neighbour: the cosine's margin over
        the larger of the two statements' best cosine with unrelated anchor sentences. e5 puts
        unrelated statements at 0.8 and more; a statement close to everything gets no credit for
        being close to this one too."""
        if not others:
            return {}
        anchors = self._anchors()
        own = float(np.max(anchors @ vec))
        pks = list(others)
        mat = np.vstack([others[pk] for pk in pks])
        cos = mat @ vec
        base = np.maximum((mat @ anchors.T).max(axis=1), own)
        return {pk: float(c - b) for pk, c, b in zip(pks, cos, base)}

    def _prejudge(self: "Mnemo", prepared: list[Memory], vectors: list[np.ndarray]) -> dict[tuple[str, str], str]:
        """Ask the LLM, before the write transaction, about every new memory the rules cannot place."""
        verdicts: dict[tuple[str, str], str] = {}
        if self.chat is None:
            return verdicts
        for mem, vec in zip(prepared, vectors):
            decision = self._decide(mem, vec)
            if decision.verdict is not None and decision.judged is not None:
                verdicts[(mem.id, decision.judged)] = decision.verdict
        return verdicts

    def _judge(self: "Mnemo", mem: Memory, close: list[tuple[Memory, float]], rules: Decision) -> Decision:
        """The LLM's verdict on the closest neighbour the rules left open; on any failure, the
        rules' own decision (``rules``), saying why."""
        from .._llm.chat import ChatError, judge

        old, cos = close[0]
        try:
            relation = judge(self.chat, old.content, mem.content)  # type: ignore[arg-type]
        except ChatError as exc:
            relation = f"unavailable ({exc})"
        if relation.startswith("unavailable"):
            decision = replace(rules, detail=f"judge {relation}; rules decided" + (f": {rules.detail}" if rules.detail else ""))
        else:
            decision = _verdict(relation, close, [x for x in (rules.related or []) if x[0].id != old.id])
        decision.verdict, decision.judged = relation, old.id
        return decision


    def _merge_into(self: "Mnemo", target: Memory, new: Memory, *, similarity: float | None, cause: str) -> Memory:
        """A repeat strengthens the memory it repeats: tags merged, importance nudged up (a
        statement made again matters more), confidence raised; the repeat's text is kept in the
        event so ``restore`` can split it out again."""
        before = {"tags": target.tags, "importance": target.importance, "confidence": target.confidence}
        tags = list(dict.fromkeys([*target.tags, *new.tags]))
        importance = min(1.0, max(target.importance, new.importance) + 0.05)
        confidence = max(target.confidence, new.confidence)
        self.store.update_fields(target.id, tags=tags, importance=importance, confidence=confidence)
        self.store.add_event(target.id, "merged", cause, {
            "before": before, "similarity": None if similarity is None else round(similarity, 4),
            "merged": {"content": new.content, "type": new.type, "tags": new.tags, "importance": new.importance,
                       "confidence": new.confidence, "source": new.source, "created_at": new.created_at, "metadata": new.metadata},
        })
        target.tags, target.importance, target.confidence = tags, importance, confidence
        return target

    def _apply_decision(self: "Mnemo", decision: Decision, mem: Memory) -> None:
        """Record a decision's links and status changes once ``mem`` is stored (same transaction)."""
        if decision.action == "superseded" and decision.target is not None:
            self._supersede(decision.target, mem, decision.detail)
        elif decision.action == "related":
            for other, cos in decision.related or []:
                self.store.add_relation(mem.id, other.id, "related", round(cos, 4))
            if decision.conflict_with is not None:
                self.store.add_event(mem.id, "possible_conflict", decision.detail, {"with": decision.conflict_with.id})

    def _supersede(self: "Mnemo", old: Memory, new: Memory, why: str) -> None:
        """``new`` replaces ``old`` (inside the caller's transaction): status, link and both histories."""
        self.store.set_status(old.id, "superseded", superseded_by=new.id)
        self.store.add_event(old.id, "superseded", why, {"by": new.id})
        self.store.add_relation(new.id, old.id, "supersedes", 1.0)
        self.store.add_event(new.id, "supersedes", why, {"old": old.id})

    # ------------------------------------------------------------ edit and undo

    def edit(
        self: "Mnemo",
        memory_id: str,
        *,
        content: str | None = None,
        type: str | None = None,
        tags: Any = None,
        importance: float | None = None,
        confidence: float | None = None,
        scope: str | None = None,
        expires: str | None = None,
        pinned: bool | None = None,
    ) -> Memory:
        """Change a memory; the old values go into its history (``restore`` reverts the edit)."""
        mem = self.get(memory_id)
        changes: dict[str, Any] = {}
        new_content = None
        if content is not None:
            new_content = self._prepare({"content": content, "scope": mem.scope}).content
            if new_content != mem.content:
                changes["content"] = new_content
        if type is not None:
            changes["type"] = check_type(type)
        if tags is not None:
            changes["tags"] = self._clean_tags(tags)
        if importance is not None:
            changes["importance"] = check_unit(importance, "importance")
        if confidence is not None:
            changes["confidence"] = check_unit(confidence, "confidence")
        if scope is not None:
            changes["scope"] = check_scope(scope)
        if expires is not None:
            changes["expires_at"] = parse_expiry(expires, utcnow())[0] if expires else None
        if pinned is not None:
            changes["pinned"] = bool(pinned)
        changes = {k: v for k, v in changes.items() if getattr(mem, k) != v}
        if not changes:
            raise InvalidInputError(f"nothing to change in {mem.id}")
        self._write_changes(mem, changes, event="updated", cause="edit")
        return self.get(mem.id)

    def _write_changes(self: "Mnemo", mem: Memory, changes: dict[str, Any], *, event: str, cause: str) -> None:
        """Apply field changes (re-embedding new content) and record the old values."""
        fields = dict(changes)
        fresh: dict[str, np.ndarray] = {}
        if "content" in fields:
            self._check_model()
            text = embed_text(replace(mem, content=fields["content"]))  # keeps an ingested chunk's heading prefix
            (h,), _, fresh = self._vectors([text])
            fields.update(content_hash=_text.content_hash(fields["content"]), embed_hash=h, tokens=_text.index_tokens(text))
        before = {k: getattr(mem, k) for k in changes}
        with self._lock, self.store.transaction():
            self._store_vectors(fresh)
            self.store.update_fields(mem.id, **fields)
            self.store.add_event(mem.id, event, cause, {"before": before})

    def restore(self: "Mnemo", memory_id: str, *, cause: str = "restore") -> Memory:
        """Undo a memory's last lifecycle step: un-delete, un-archive, un-supersede, un-merge (the
        merged-in statement becomes its own memory again), un-edit, or undo a consolidation.

        Un-superseding makes the old memory current again and its replacement superseded by it
        (recorded, and reversible the same way), so two memories where one replaced the other
        are never both active. Restoring a consolidation summary re-activates the sources it
        archived and archives the summary."""
        mem = self.get(memory_id)
        if mem.status != "active":
            with self.store.transaction():
                self.store.set_status(mem.id, "active")
                self.store.add_event(mem.id, "restored", cause, {"from": mem.status, **({"superseded_by": mem.superseded_by} if mem.superseded_by else {})})
                replacement = self.store.get(mem.superseded_by) if mem.status == "superseded" and mem.superseded_by else None
                if replacement is not None and replacement.status == "active":
                    self.store.set_status(replacement.id, "superseded", superseded_by=mem.id)
                    self.store.add_event(replacement.id, "superseded", f"{cause}: {mem.id} is current again", {"by": mem.id})
            return self.get(mem.id)
        if mem.source == "consolidate":
            return self._unconsolidate(mem, cause)
        last = next((e for e in reversed(self.store.events(mem.id)) if e["kind"] in _UNDOABLE + _UNDONE), None)
        if last is None or last["kind"] in _UNDONE:
            raise InvalidInputError(f"{mem.id} is active: nothing to restore (no lifecycle step to undo)")
        before = last["data"].get("before", {})
        if last["kind"] == "updated":
            self._write_changes(mem, before, event="reverted", cause=cause)
            return self.get(mem.id)
        merged = last["data"].get("merged") or {}
        split = None
        if merged.get("content"):
            split = self.remember_many([{**merged, "scope": mem.scope}], cause="unmerge", dedup=False, _merge_exact=False)[0][0]
        with self.store.transaction():
            self.store.update_fields(mem.id, **{k: v for k, v in before.items() if k in ("tags", "importance", "confidence")})
            self.store.add_event(mem.id, "unmerged", cause, {"split_into": split.id if split else None})
        return self.get(mem.id)

    def _unconsolidate(self: "Mnemo", summary: Memory, cause: str) -> Memory:
        """Undo a consolidation: its archived sources become active again, the summary archived."""
        sources = [r["id"] for r in self.store.relations(summary.id) if r["kind"] == "derived_from" and r["direction"] == "out"]
        with self.store.transaction():
            back = []
            for sid in sources:
                src = self.store.get(sid)
                if src is not None and src.status == "archived":
                    self.store.set_status(sid, "active")
                    self.store.add_event(sid, "restored", cause, {"from": "archived", "summary": summary.id})
                    back.append(sid)
            self.store.set_status(summary.id, "archived")
            self.store.add_event(summary.id, "archived", f"{cause}: consolidation undone", {"sources_restored": back})
        return self.get(summary.id)

    def related(self: "Mnemo", memory_id: str) -> list[dict[str, Any]]:
        """The memories linked to this one (related, supersedes, derived_from…), strongest first."""
        mem = self.get(memory_id)
        return self.store.relations(mem.id)

    def changes(self: "Mnemo", *, days: float = 7, scope: str | None = None, limit: int = 100,
                now: str | datetime | None = None) -> list[dict[str, Any]]:
        """What the store did to memories in the last ``days`` days, newest first: merges,
        edits, supersedes, archives and forgets, each ``{"memory_id", "kind", "at", "cause",
        "data", "memory", "undo"}``. ``undo`` is True while the step is still the memory's
        latest of its sort, so that :meth:`restore` of ``memory_id`` reverts exactly this step
        (a later edit, or a memory already restored, makes it False). In ``scope`` plus global
        (default: the current scope; ``all`` for every scope)."""
        since = (parse_time(now) if now else utcnow()) - timedelta(days=days)
        scopes = self._visible_scopes(scope)
        found = self.store.recent_events(since=format_time(since), kinds=tuple(_CHANGES), limit=limit if scopes is None else limit * 20)
        out: list[dict[str, Any]] = []
        for ev in found:
            mem = self.store.get(ev["memory_id"])
            if mem is None or (scopes is not None and mem.scope not in scopes):
                continue  # purged since, or another scope
            out.append({**ev, "memory": mem, "undo": self._reverts_to(mem, ev)})
            if len(out) >= limit:
                break
        return out

    def _reverts_to(self: "Mnemo", mem: Memory, ev: dict[str, Any]) -> bool:
        """Whether ``restore(mem)`` would undo exactly the step ``ev``."""
        status = _CHANGES[ev["kind"]]
        history = self.store.events(mem.id)
        if status is not None:  # a status step: still in that status, and no status step after it
            last = next((e for e in reversed(history) if e["kind"] in ("superseded", "archived", "deleted", "restored")), None)
            return mem.status == status and last is not None and _same_event(last, ev)
        if mem.status != "active" or mem.source == "consolidate":
            return False
        last = next((e for e in reversed(history) if e["kind"] in _UNDOABLE + _UNDONE), None)
        return last is not None and _same_event(last, ev)

    # ------------------------------------------------------------ expiry

    def review(self: "Mnemo", *, now: str | datetime | None = None, limit: int = 100, scope: str | None = None) -> list[Memory]:
        """Active memories whose expiry or review date has passed (not recalled until confirmed),
        in ``scope`` plus global (default: the current scope; ``all`` for every scope)."""
        now_dt = parse_time(now) if now else utcnow()
        scopes = self._visible_scopes(scope)
        found = self.store.expired(format_time(now_dt), limit if scopes is None else 100_000)
        return [m for m in found if scopes is None or m.scope in scopes][:limit]

    def conflicts(self: "Mnemo", *, scope: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Possible conflicts the write rules could not settle: a newer memory that may replace an
        older one. Both stay active and linked until :meth:`resolve` decides; listed newest first
        as ``{"new": Memory, "old": Memory, "why": str, "at": str}``."""
        scopes = self._visible_scopes(scope)
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for ev in self.store.events_of_kind("possible_conflict", 10_000):
            new_id, old_id = ev["memory_id"], ev["data"].get("with")
            if new_id in seen or not old_id:
                continue
            seen.add(new_id)
            new, old = self.store.get(new_id), self.store.get(old_id)
            if new is None or old is None or new.status != "active" or old.status != "active":
                continue
            if scopes is not None and new.scope not in scopes:
                continue
            if any(e["kind"] == "conflict_resolved" for e in self.store.events(new_id)):
                continue
            out.append({"new": new, "old": old, "why": ev["cause"] or "", "at": ev["at"]})
            if len(out) >= limit:
                break
        return out

    def resolve(self: "Mnemo", memory_id: str, *, supersede: bool) -> Memory:
        """Settle a possible conflict of the newer memory ``memory_id``: ``supersede=True`` makes
        it replace the older one (undo: ``restore OLD``), ``False`` keeps both as they are."""
        mem = self.get(memory_id)
        pending = next((c for c in self.conflicts(scope="all", limit=10_000) if c["new"].id == mem.id), None)
        if pending is None:
            raise InvalidInputError(f"{mem.id} has no open possible conflict (see `mnemo review`)")
        old = pending["old"]
        with self.store.transaction():
            if supersede:
                self._supersede(old, mem, "resolve: replaced by a newer statement")
            self.store.add_event(mem.id, "conflict_resolved", "resolve", {"with": old.id, "kept": "new" if supersede else "both"})
        return self.get(mem.id)

    def confirm(self: "Mnemo", memory_id: str, *, expires: str | None = None, now: str | datetime | None = None) -> Memory:
        """Reconfirm a memory: a new expiry (given, or the same span as before from now), or none."""
        mem = self.get(memory_id)
        now_dt = parse_time(now) if now else utcnow()
        span = mem.metadata.get("expires_after")
        if expires:
            expires_at, span = parse_expiry(expires, now_dt)
        elif span:
            expires_at = format_time(now_dt + timedelta(seconds=int(span)))
        else:
            expires_at = None
        metadata = {**mem.metadata, "expires_after": span} if span else {k: v for k, v in mem.metadata.items() if k != "expires_after"}
        with self.store.transaction():
            self.store.update_fields(mem.id, expires_at=expires_at, metadata=metadata)
            self.store.add_event(mem.id, "confirmed", "confirm", {"expires_at": expires_at, "before": {"expires_at": mem.expires_at}})
        return self.get(mem.id)

    # ------------------------------------------------------------ consolidation

    def consolidate(
        self: "Mnemo",
        *,
        scope: str | None = None,
        since: str | datetime | None = None,
        apply: bool = False,
        min_group: int = 3,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """Fold fragments about one topic into a summary memory, without losing a fact.

        Groups are greedy clusters over the vectors: a member is on the seed's topic when its
        calibrated similarity (:meth:`_margins`) reaches the model's ``link`` margin (or the raw
        cosine ``threshold``, when given) and it is not another subject of the seed's template.
        Each group of ``min_group`` or more gets one summary — its most central statements,
        extractively, or the configured LLM's — and a source is archived only when the summary
        carries every number, name and key term of it; any other source stays active, and the
        report says what the summary would have lost. A summary that would cover fewer than two
        sources is not written. Sources are linked ``derived_from``; ``restore SUMMARY`` undoes the
        whole step. A dry run unless ``apply``."""
        from .._lifecycle.pairs import other_subject, shares_topic

        the_scope = check_scope(scope, self.scope)
        cal = self.embedder.calibration
        mems = self.list(scope=the_scope, since=since, limit=100_000)
        mems = [m for m in mems if m.scope == the_scope and not m.pinned]
        if len(mems) < min_group:
            return {"applied": apply, "scope": the_scope, "groups": []}
        self._check_model()
        idx = self._fresh_index()
        pks = [self.store.pk_of(m.id) for m in mems]
        vec_of = idx.vectors([p for p in pks if p is not None])
        order = [i for i, pk in enumerate(pks) if pk in vec_of]
        groups: list[list[int]] = []
        used: set[int] = set()
        for i in order:  # newest first: a group forms around recent statements
            if i in used:
                continue
            seed = vec_of[pks[i]]
            if threshold is not None:
                near = {j: float(vec_of[pks[j]] @ seed) >= threshold for j in order}
            else:
                margins = self._margins(seed, {pks[j]: vec_of[pks[j]] for j in order if j not in used})
                near = {j: margins.get(pks[j], -1.0) >= cal.link for j in order}
            # complete linkage on the topic: a member names something in common with every member before it
            members = [i]
            for j in sorted((j for j in order if j not in used and j != i and near[j]), key=lambda j: -float(vec_of[pks[j]] @ seed)):
                if all(shares_topic(mems[k].content, mems[j].content) and not other_subject(mems[k].content, mems[j].content) for k in members):
                    members.append(j)
            if len(members) >= min_group:
                groups.append(members)
                used.update(members)
        report = []
        for members in groups:
            group = [mems[j] for j in members]
            vecs = np.vstack([vec_of[pks[j]] for j in members])
            summary, by = " / ".join(group[c].content for c in sorted(_central(vecs, min(3, len(group))))), "extractive"
            if self.chat is not None:
                from .._llm.chat import ChatError, summarize

                try:
                    summary, by = summarize(self.chat, [m.content for m in group]), "llm"
                except ChatError as exc:
                    by = f"extractive (LLM unavailable: {exc})"
            lost = {m.id: _lost(summary, m.content) for m in group}
            covered = [m for m in group if not lost[m.id]]
            entry: dict[str, Any] = {
                "sources": [m.id for m in group], "summary": summary, "summary_by": by,
                "archive": [m.id for m in covered] if len(covered) >= 2 else [],
                "keep": [{"id": m.id, "content": m.content, "lost": lost[m.id]} for m in group if lost[m.id]],
            }
            if len(covered) < 2:
                entry["skipped"] = "the summary would carry the facts of fewer than two sources"
            elif apply:
                types = [m.type for m in covered]
                new, _ = self.remember_many([{
                    "content": summary, "scope": the_scope, "type": max(set(types), key=types.count),
                    "tags": list(dict.fromkeys(t for m in covered for t in m.tags)),
                    "importance": max(m.importance for m in covered), "source": "consolidate",
                    "metadata": {"consolidated_from": len(covered), "summary_by": by.split(" ")[0]},
                }], cause="consolidate", dedup=False, _merge_exact=False)[0]
                with self.store.transaction():
                    for m in covered:
                        self.store.add_relation(new.id, m.id, "derived_from", 1.0)
                        self.store.set_status(m.id, "archived")
                        self.store.add_event(m.id, "archived", "consolidated", {"into": new.id})
                entry["summary_id"] = new.id
            report.append(entry)
        return {"applied": apply, "scope": the_scope, "groups": report}

    # ------------------------------------------------------------ decay and archive

    def gc(self: "Mnemo", *, apply: bool = False, now: str | datetime | None = None, archive_days: float = 180.0, limit: int = 10_000) -> dict[str, Any]:
        """Archive memories nobody has used for ``archive_days`` (from the later of their last
        access and the moment they entered the store; importance ≥ 0.8 and pinned ones are exempt).
        A dry run unless ``apply``; archived memories stay searchable with include_archived."""
        now_dt = parse_time(now) if now else utcnow()
        cutoff = format_time(now_dt - timedelta(days=archive_days))
        stale = self.store.unused_since(cutoff, min_importance=0.8, limit=limit)
        if apply and stale:
            with self.store.transaction():
                for mem in stale:
                    self.store.set_status(mem.id, "archived")
                    self.store.add_event(mem.id, "archived", f"gc: not used for {archive_days:g} days", {})
        return {"applied": apply, "archive_days": archive_days, "archive": [
            {"id": m.id, "content": m.content, "last_used": max(m.last_accessed_at or "", m.stored_at or m.created_at)} for m in stale]}


def _lost(summary: str, source: str) -> list[str]:
    """The numbers, names and content words of ``source`` that ``summary`` does not carry."""
    from .._lifecycle.pairs import tokens

    have = {t.key for t in tokens(summary)}
    norm = _text.normalize(summary)
    return list(dict.fromkeys(t.key for t in tokens(source) if t.key not in have and not (_text.has_han(t.key) and t.key in norm)))


def _central(vecs: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` members most similar to all the others (an extractive summary)."""
    sims = vecs @ vecs.T
    return list(np.argsort(-sims.mean(axis=1), kind="stable")[:k])


def _expired(mem: Memory) -> bool:
    return bool(mem.expires_at) and mem.expires_at <= format_time(utcnow())  # type: ignore[operator]


def _verdict(relation: str, close: list[tuple[Memory, float]], linked: list[tuple[Memory, float]]) -> Decision:
    """The decision for an LLM judge's answer about the closest neighbour the rules left open
    (``close[0]``); ``linked`` are the links the rules would make anyway."""
    old, cos = close[0]
    if relation == "duplicate":
        return Decision("merged", old, cos, "LLM judge: duplicate")
    if relation == "conflicting":
        return Decision("superseded", old, cos, "LLM judge: conflicting")
    if relation == "different":
        others = [x for x in linked if x[0].id != old.id]
        return Decision("related", others[0][0], others[0][1], "LLM judge: different", related=others) if others else Decision("created", None, cos, "LLM judge: different")
    return Decision("related", old, cos, "LLM judge: related", related=[(old, cos), *[x for x in linked if x[0].id != old.id]])


def _same_event(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two reads of one history event (events carry no id of their own in these dicts)."""
    return all(a.get(k) == b.get(k) for k in ("kind", "at", "cause", "data"))
