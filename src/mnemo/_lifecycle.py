"""Lifecycle of memories: write-time dedup / related links / supersede, edit, undo, expiry, decay
and archive. A mixin of :class:`mnemo.Mnemo`, kept apart to keep modules small.

Nothing here deletes: merges keep the merged text in the history (so they can be undone),
superseded and archived memories stay in the store, and ``restore`` reverts a memory's last
lifecycle step. ``purge`` (in ``_maintenance``) is the only hard delete.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _text
from ._models import Memory, embed_text, check_scope, check_tags, check_type, check_unit, format_time, parse_duration, parse_time, utcnow
from .errors import InvalidInputError

if TYPE_CHECKING:
    from ._core import Mnemo

#: events that change a memory and that ``restore`` can revert, newest first wins
_UNDOABLE = ("merged", "updated")
_UNDONE = ("unmerged", "reverted", "restored")
#: neighbours examined per write
NEIGHBOURS = 5


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
        write transaction, so concurrent writers see each other). Conflicts are checked first: a
        changed port is very similar to the old one, and must supersede it, not merge into it.

        Where the rules cannot tell, the configured LLM's verdict decides. It is asked before the
        transaction (:meth:`_prejudge`) so a slow endpoint never holds the store's write lock;
        ``verdicts`` maps (new id, neighbour id) to its answer. Called with ``verdicts=None``
        outside a transaction, this asks the LLM itself and records the answer there."""
        from ._conflict import detect_conflict

        idx = self._fresh_index()
        mask = idx.mask(scopes=[mem.scope], types=None, statuses=("active",), since=None, until=None)
        neighbours = [(pk, cos) for pk, cos in idx.search(vec, NEIGHBOURS, mask) if cos >= self.embedder.calibration.related]
        if not neighbours:
            return Decision("created")
        found = self.store.get_many_by_pk([pk for pk, _ in neighbours])
        close = [(found[pk], cos) for pk, cos in neighbours if pk in found and not _expired(found[pk])]
        for old, cos in close:
            conflict = detect_conflict(old.content, mem.content)
            if conflict is not None and not _enumerates(conflict.reason, conflict.detail):
                return Decision("superseded", old, cos, conflict.detail)
        if not close:
            return Decision("created")
        top, cos = close[0]
        cal = self.embedder.calibration
        if cos >= cal.duplicate and not adds_information(top.content, mem.content) and same_subject(top.content, mem.content):
            return Decision("merged", top, cos, "near repeat")
        if cos >= cal.paraphrase and restates(top.content, mem.content):
            return Decision("merged", top, cos, "restates the same facts")
        if self.chat is not None:  # the rules cannot tell: the configured LLM decides about the closest one
            if verdicts is None:
                return self._judge(mem, close)
            relation = verdicts.get((mem.id, top.id))
            if relation is None:  # the store changed since the LLM was asked: keep the rules' answer
                return Decision("related", top, cos, "judge skipped: neighbours changed during the write", related=close)
            return _verdict(relation, close)
        return Decision("related", close[0][0], close[0][1], related=close)

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

    def _judge(self: "Mnemo", mem: Memory, close: list[tuple[Memory, float]]) -> Decision:
        """The LLM's verdict on the closest neighbour; on any failure, the rules' "related"."""
        from ._chat import ChatError, judge

        old, cos = close[0]
        try:
            relation = judge(self.chat, old.content, mem.content)  # type: ignore[arg-type]
        except ChatError as exc:
            relation = f"unavailable ({exc})"
        decision = _verdict(relation, close)
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
            old = decision.target
            self.store.set_status(old.id, "superseded", superseded_by=mem.id)
            self.store.add_event(old.id, "superseded", decision.detail, {"by": mem.id})
            self.store.add_relation(mem.id, old.id, "supersedes", 1.0)
            self.store.add_event(mem.id, "supersedes", decision.detail, {"old": old.id})
        elif decision.action == "related":
            for other, cos in decision.related or []:
                self.store.add_relation(mem.id, other.id, "related", round(cos, 4))

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
            changes["tags"] = check_tags(tags)
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
        """Undo a memory's last lifecycle step: un-delete, un-archive, un-supersede (back to
        active), un-merge (the merged-in statement becomes its own memory again) or un-edit."""
        mem = self.get(memory_id)
        if mem.status != "active":
            with self.store.transaction():
                self.store.set_status(mem.id, "active")
                self.store.add_event(mem.id, "restored", cause, {"from": mem.status, **({"superseded_by": mem.superseded_by} if mem.superseded_by else {})})
            return self.get(mem.id)
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

    def related(self: "Mnemo", memory_id: str) -> list[dict[str, Any]]:
        """The memories linked to this one (related, supersedes, derived_from…), strongest first."""
        mem = self.get(memory_id)
        return self.store.relations(mem.id)

    # ------------------------------------------------------------ expiry

    def review(self: "Mnemo", *, now: str | datetime | None = None, limit: int = 100) -> list[Memory]:
        """Active memories whose expiry or review date has passed (not recalled until confirmed)."""
        now_dt = parse_time(now) if now else utcnow()
        return self.store.expired(format_time(now_dt), limit)

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
        """Group fragments about the same topic (greedy clusters over the vectors: members at
        least ``threshold`` similar to the group's first member, default the model's ``related``
        threshold) and, for each group of ``min_group`` or more, write one summary memory — its
        most central statements, extractively — linked ``derived_from`` to its sources, which are
        archived (not deleted; ``restore`` brings each back). A dry run unless ``apply``."""
        the_scope = check_scope(scope, self.scope)
        cut = threshold if threshold is not None else self.embedder.calibration.related
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
            members = [j for j in order if j not in used and float(vec_of[pks[j]] @ seed) >= cut]
            if len(members) >= min_group:
                groups.append(members)
                used.update(members)
        report = []
        for members in groups:
            group = [mems[j] for j in members]
            vecs = np.vstack([vec_of[pks[j]] for j in members])
            summary, by = " / ".join(group[c].content for c in sorted(_central(vecs, min(3, len(group))))), "extractive"
            if self.chat is not None:
                from ._chat import ChatError, summarize

                try:
                    summary, by = summarize(self.chat, [m.content for m in group]), "llm"
                except ChatError as exc:
                    by = f"extractive (LLM unavailable: {exc})"
            entry: dict[str, Any] = {"sources": [m.id for m in group], "summary": summary, "summary_by": by}
            if apply:
                types = [m.type for m in group]
                new, _ = self.remember_many([{
                    "content": summary, "scope": the_scope, "type": max(set(types), key=types.count),
                    "tags": list(dict.fromkeys(t for m in group for t in m.tags)),
                    "importance": max(m.importance for m in group), "source": "consolidate",
                    "metadata": {"consolidated_from": len(group), "summary_by": by.split(" ")[0]},
                }], cause="consolidate", dedup=False, _merge_exact=False)[0]
                with self.store.transaction():
                    for m in group:
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


#: words before a number that make it an identifier in a series, not a value of one slot:
#: "tip number 5" and "tip number 6" are two tips, while "port 5432" → "port 5433" is a change
_IDENTIFIER_WORDS = frozenset(
    "number no # module day ticket issue pr step item part chapter section tip note case page figure table line task bug".split()
)


def _enumerates(reason: str, detail: str) -> bool:
    """A "new value" that is only the next item of a numbered series (see _IDENTIFIER_WORDS)."""
    if reason != "new_value":
        return False
    head = detail.split("→")[0].strip().split()
    return len(head) >= 2 and head[-2].casefold().lstrip("#") in _IDENTIFIER_WORDS | {""}


def adds_information(old: str, new: str) -> bool:
    """Whether ``new`` says more than ``old``: it brings a number, or several content words that
    ``old`` lacks (and more than ``old`` has that ``new`` lacks — a paraphrase swaps words, an
    added detail only adds them). Cosine alone cannot tell "…port 8080" from "…port 8080 and
    sits behind nginx"; merging the second would lose the detail."""
    a, b = _facts(old).terms, _facts(new).terms  # "09:30" is not a new number after "9:30", "Note:" no new word
    extra, missing = b - a, a - b
    if any(any(ch.isdigit() for ch in t) for t in extra):
        return True
    return len(extra) >= 2 and len(extra) > len(missing)


#: Chinese numerals and the measure words after which a numeral is a quantity ("十分钟" = 10 minutes;
#: "一家" is "a", not 1)
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = ("毫秒", "分钟", "小时", "个月", "秒", "天", "周", "年", "点", "岁", "次", "个", "倍", "人", "台", "万", "行")
_EN_NUMBERS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_EN_NUMBERS.update({"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100})
_LEADING_NUMBER = re.compile(r"^\d+(?:\.\d+)?")
_QUOTED = re.compile(r"['\"`‘“「『]([^'\"`’”」』\n]{1,40})['\"`’”」』]")
#: words that name one of several parallel things: two statements that differ in them are about
#: different subjects ("the staging database…" vs "the production database…"), never repeats
_CONTRASTS: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "生产 线上 正式 测试 预发布 预发 开发 本地 staging prod production dev development test testing local qa sandbox",
    "前端 后端 客户端 服务端 移动端 frontend backend client server mobile web desktop",
    "ios android 安卓 苹果 windows macos linux",
    "周一 周二 周三 周四 周五 周六 周日 周末 monday tuesday wednesday thursday friday saturday sunday weekend",
    "每天 每周 每月 每年 每小时 daily weekly monthly yearly hourly nightly",
    "上午 下午 晚上 凌晨 中午 morning afternoon evening night noon",
))
#: units after a number are part of the number, not names ("16 GB" = "16GB")
_UNITS = frozenset("b kb mb gb tb pb k m g ms s sec min h hr hrs kg km px pt qps rps rpm am pm".split())
_FILLER = frozenset("记住 备注 注意 remember note".split())
_LATIN_WORD = re.compile(r"(?<![A-Za-z0-9])(?:[A-Za-z][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]|[A-Za-z])")


def _zh_number(token: str) -> str | None:
    """``十`` → 10, ``二十五`` → 25, ``九点`` → 9 when a measure word follows; else None."""
    i = 0
    while i < len(token) and (token[i] in _ZH_DIGITS or token[i] in "十百"):
        i += 1
    if i == 0 or (i < len(token) and not token[i:].startswith(_ZH_UNITS)):
        return None
    digits, value, current = token[:i], 0, 0
    for ch in digits:
        if ch in "十百":
            value += (current or 1) * (10 if ch == "十" else 100)
            current = 0
        else:
            current = _ZH_DIGITS[ch]
    return str(value + current)


def fact_anchors(text: str, names_from: str = "") -> set[str]:
    """The parts of a statement that pin down its facts: numbers (digits, Chinese numerals and
    English number words alike, units dropped: "200ms" = "200 毫秒" = 200) and names (tools,
    products, people, places: "FastAPI", "Miso", "Berlin") — Latin words inside Chinese text,
    quoted words, and in English the capitalised words that do not start a sentence. A word
    written as a name in ``names_from`` (the other statement of a pair) counts as a name here
    too, so "Alice owns…" and "…owned by Alice" agree. Two statements with the same anchors and
    the same subject words are restatements; a changed number or name is a new fact."""
    own = _facts(text)
    other = _facts(names_from) if names_from else None
    loose = own.loose
    if other is not None and not (own.loose - other.loose and other.loose - own.loose):
        # only a swap on both sides ("用 pnpm" / "用 npm") names different things; a word that one
        # side merely adds is English borrowed into a Chinese sentence ("push 到 main 分支")
        loose = frozenset()
    names = own.names | (other.names if other is not None else frozenset())
    return set(own.numbers | (names & own.words) | loose)


@dataclass(frozen=True)
class _Facts:
    """What the dedup rules read from one statement, worked out once per text (:func:`_facts`)."""

    terms: frozenset[str]  # search terms, numbers written one way, no units or filler
    numbers: frozenset[str]
    names: frozenset[str]  # Latin words it writes as names (lowercased)
    loose: frozenset[str]  # plain lowercase Latin words inside Chinese text
    words: frozenset[str]  # every Latin word (lowercased)
    contrasts: frozenset[str]  # members of _CONTRASTS it mentions


@lru_cache(maxsize=512)
def _facts(text: str) -> _Facts:
    """:class:`_Facts` of ``text``; cached, since a write compares one text with several neighbours
    and each comparison reads both sides more than once."""
    terms = _fact_terms(text)
    names, loose = _names(text)
    words = {m.group(0).lower() for m in _LATIN_WORD.finditer(unicodedata.normalize("NFKC", text))}
    return _Facts(frozenset(terms), frozenset(t for t in terms if t[0].isdigit()), frozenset(names), frozenset(loose),
                  frozenset(words), frozenset(_contrast_words(text)))


def _fact_terms(text: str) -> set[str]:
    """The statement's search terms with every number written one way ("09", "九点", "nine" → "9"),
    without units and the words that only announce a memory ("记住：", "Note:")."""
    out: set[str] = set()
    for term in _text.query_terms(text)[0]:
        if term in _UNITS or term in _FILLER:
            continue
        number = _LEADING_NUMBER.match(term)
        zh = _zh_number(term) if _text.has_han(term) else None
        if number:
            out.add(number.group(0).lstrip("0") or "0")
        elif term in _EN_NUMBERS:
            out.add(str(_EN_NUMBERS[term]))
        else:
            out.add(zh if zh is not None else term)
    return out


def _names(text: str) -> tuple[set[str], set[str]]:
    """Latin-script words that ``text`` writes as names (lowercased), and apart from them the
    plain lowercase words inside Chinese text, which are names ("用 pnpm") or borrowed English
    ("push 到 main 分支", "杭州 region"): :func:`fact_anchors` counts them only when both
    statements have one the other lacks."""
    text = unicodedata.normalize("NFKC", text)  # full-width letters, not case: capitals matter here
    found = {q.strip().lower() for q in _QUOTED.findall(text)}
    loose: set[str] = set()
    has_han = _text.has_han(text)
    for match in _LATIN_WORD.finditer(text):
        word = match.group(0)
        if word == "I" or word.lower() in _UNITS:
            continue
        start = text[:match.start()].rstrip()
        sentence_start = not start or start[-1] in ".!?;。！？；\n"
        # capitalised where a sentence does not start it: a name, even one spelled like a common word ("in Go")
        capitalised = any(ch.isupper() for ch in word) and not (sentence_start and word[1:].islower())
        if capitalised or (has_han and not word.isalpha()) or (has_han and word.lower() in _text._terms()[0]):
            found.add(word.lower())
        elif has_han:
            loose.add(word.lower())
    return found, loose


def same_subject(old: str, new: str) -> bool:
    """False when the two statements pin different facts or subjects: different numbers or names
    (:func:`fact_anchors`), or different members of a set of parallel things (staging vs
    production, frontend vs backend, Monday vs Friday). A near-repeat by cosine must pass this
    before it is merged: e5 scores "the 'clicks' topic has 6 partitions" and "the 'orders' topic
    has 6 partitions" at 0.97."""
    return _shared_anchors(old, new) is not None


def _shared_anchors(old: str, new: str) -> set[str] | None:
    """The anchors both statements pin when they are about the same subject, else None."""
    anchors = fact_anchors(old, new)
    if anchors != fact_anchors(new, old):
        return None
    a, b = _facts(old).contrasts, _facts(new).contrasts
    if any(a & group and b & group and (a & group) != (b & group) for group in _CONTRASTS):
        return None
    return anchors


def _contrast_words(text: str) -> set[str]:
    lowered = _text.normalize(text).lower()
    words = set(re.findall(r"[a-z]+", lowered))
    return {w for group in _CONTRASTS for w in group if (w in words if w.isascii() else w in lowered)}


def restates(old: str, new: str) -> bool:
    """Whether ``new`` says what ``old`` says in other words: the same non-empty anchors (see
    :func:`fact_anchors`), words swapped rather than added (a paraphrase replaces words; a new
    detail only adds them, and "…, also for locks" after "Redis for caching" is new), and at
    most one more new word than dropped ones; numbers alone must come with a shared subject
    word. Used below the near-repeat cosine, where similarity alone cannot tell a rewording
    from a new fact about the same thing."""
    anchors = _shared_anchors(old, new)
    if not anchors:
        return False
    old_terms, new_terms = _facts(old).terms, _facts(new).terms
    if all(x[0].isdigit() for x in anchors) and not (old_terms & new_terms) - anchors:
        return False  # only a number in common ("10 o'clock" vs "10 seconds"): no shared subject
    extra, missing = new_terms - old_terms, old_terms - new_terms
    if extra and not missing:
        return False
    return len(extra) <= len(missing) + 1


def _central(vecs: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` members most similar to all the others (an extractive summary)."""
    sims = vecs @ vecs.T
    return list(np.argsort(-sims.mean(axis=1), kind="stable")[:k])


def _expired(mem: Memory) -> bool:
    return bool(mem.expires_at) and mem.expires_at <= format_time(utcnow())  # type: ignore[operator]


def _verdict(relation: str, close: list[tuple[Memory, float]]) -> Decision:
    """The decision for an LLM judge's answer about the closest neighbour (``unavailable: …``
    when it could not answer: the rules' "related")."""
    old, cos = close[0]
    if relation.startswith("unavailable"):
        return Decision("related", old, cos, f"judge {relation}; rules decided", related=close)
    if relation == "duplicate":
        return Decision("merged", old, cos, "LLM judge: duplicate")
    if relation == "conflicting":
        return Decision("superseded", old, cos, "LLM judge: conflicting")
    if relation == "different":
        return Decision("created", None, cos, "LLM judge: different")
    return Decision("related", old, cos, "LLM judge: related", related=close)
