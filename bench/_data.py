"""Loaders and metrics for mnemo's retrieval-quality benchmark (pure stdlib).

Implements the protocol in ``<shared>/bench/README.md`` for two public datasets, read
from a path (never copied into the repository):

* LoCoMo dev (``locomo/locomo-dev.json``): one store per conversation, one record per
  dialog turn (id = ``dia_id``, content = ``"<speaker>: <text>"``, created_at = the
  session's date-time). Queries are the QA questions of categories 1-4; gold = the
  turn ids parsed out of ``evidence``. ``now`` = the newest session time that has turns
  (conv-26 lists 16 extra ``session_N_date_time`` keys with no session; they are ignored).
* MADial-Bench (``madial/{zh,en}/*.json``, JSON Lines): one store per user, one record per
  event memory (created_at = its ``time`` date at 00:00 UTC). The query is
  ``dialogue[1:min(test-turn)]`` rendered as ``"Speaker: text"`` lines; gold =
  ``relevant-id``. The dialogues carry no time, so ``now`` = the newest memory time in
  that user's store.

All datetimes are timezone-aware UTC (the datasets' wall times are taken as UTC).
Queries are dropped, and counted per reason in ``StoreSpec.skip_reasons``, when they are
LoCoMo category 5 (``"adversarial"``), have no gold ids (``"no-gold"``), or name a gold id
that is not a record of the store (``"gold-not-in-store"``; a query needs its whole gold
set to be scoreable). ``skip_summary`` totals them over specs.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
_MONTHS: dict[str, int] = {
    m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)
}
_LOCOMO_DATE = re.compile(
    r"^\s*(\d{1,2})[:.](\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s*(\d{4})\s*$",
    re.IGNORECASE,
)
_DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")
_SPEAKER_TAG = re.compile(r"^<([^<>:：]{1,40})>\s*[:：]\s*")


@dataclass
class Record:
    """One memory to import into a store."""

    id: str
    content: str
    created_at: datetime
    #: where a turn sits, as a chat import records it (LoCoMo): the conversation, its session
    #: and the turn's place in the session; ``None`` for records that stand alone (MADial events)
    source: str | None = None
    session: str | None = None
    place: int | None = None


@dataclass
class Query:
    """One retrieval question with the ids of the records that answer it."""

    qid: str
    query: str
    gold: list[str]
    category: str
    now: datetime


@dataclass
class StoreSpec:
    """One isolated store: its records, its queries, and what was left out."""

    name: str
    records: list[Record]
    queries: list[Query]
    skip_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        """Number of source questions not turned into queries."""
        return sum(self.skip_reasons.values())


def default_bench_root() -> Path:
    """Return ``$MNEMO_BENCH_DATA`` if set, else ``<repo>/../shared/bench``."""
    env = os.environ.get("MNEMO_BENCH_DATA")
    if env:
        return Path(env).expanduser().resolve()
    return (Path(__file__).resolve().parents[1] / ".." / "shared" / "bench").resolve()


def skip_summary(specs: Iterable[StoreSpec]) -> dict[str, int]:
    """Total the per-reason skip counts over ``specs``."""
    total: Counter[str] = Counter()
    for spec in specs:
        total.update(spec.skip_reasons)
    return dict(total)


def parse_locomo_datetime(text: str) -> datetime:
    """Parse a LoCoMo session time such as ``"1:56 pm on 8 May, 2023"`` to aware UTC."""
    m = _LOCOMO_DATE.match(text)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date-time: {text!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower()[:3])
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        raise ValueError(f"unrecognised LoCoMo date-time: {text!r}")
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=timezone.utc)


def parse_evidence(evidence: Iterable[Any]) -> list[str]:
    """Pull the ``D<s>:<t>`` ids out of evidence strings (also ``"D8:6; D9:17"``), deduplicated."""
    ids: list[str] = []
    for item in evidence:
        for s, t in _DIA_ID.findall(str(item)):
            dia_id = f"D{int(s)}:{int(t)}"
            if dia_id not in ids:
                ids.append(dia_id)
    return ids


def _skip_reason(gold: list[str], known: set[str]) -> str | None:
    """Return the skip reason for a gold set, or None when it is usable."""
    if not gold:
        return "no-gold"
    if any(g not in known for g in gold):
        return "gold-not-in-store"
    return None


def load_locomo(path: str | Path) -> list[StoreSpec]:
    """Load LoCoMo (a JSON list of conversations) into one StoreSpec per conversation."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    specs: list[StoreSpec] = []
    for ci, sample in enumerate(data):
        conv = sample["conversation"]
        name = str(sample.get("sample_id", f"conv-{ci}"))
        sessions = sorted(
            (int(m.group(1)), key)
            for key in conv
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conv[key], list)
        )
        records: list[Record] = []
        for num, key in sessions:
            if not conv[key]:
                continue
            when = parse_locomo_datetime(conv[f"session_{num}_date_time"])
            for place, turn in enumerate(conv[key]):
                content = f"{turn['speaker']}: {turn['text']}"
                records.append(Record(id=str(turn["dia_id"]), content=content, created_at=when,
                                      source=f"chat:locomo/{name}", session=f"session_{num}", place=place))
        known = {r.id for r in records}
        now = max((r.created_at for r in records), default=datetime.now(timezone.utc))
        queries: list[Query] = []
        reasons: Counter[str] = Counter()
        for qi, qa in enumerate(sample.get("qa", [])):
            cat = int(qa["category"])
            if cat not in LOCOMO_CATEGORIES:
                reasons["adversarial" if cat == 5 else f"category-{cat}"] += 1
                continue
            gold = parse_evidence(qa.get("evidence") or [])
            reason = _skip_reason(gold, known)
            if reason:
                reasons[reason] += 1
                continue
            queries.append(Query(qid=f"{name}:q{qi}", query=str(qa["question"]), gold=gold,
                                 category=LOCOMO_CATEGORIES[cat], now=now))
        specs.append(StoreSpec(name=name, records=records, queries=queries,
                               skip_reasons=dict(reasons)))
    return specs


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSON Lines file, ignoring blank lines."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _read_madial_memory(path: Path) -> dict[str, dict[str, Any]]:
    """Read a MADial memory file (one ``{"<id>": {...}}`` object per line) keyed by id."""
    out: dict[str, dict[str, Any]] = {}
    for row in _read_jsonl(path):
        for key, value in row.items():
            out[str(key)] = value
    return out


def _strip_quotes(text: str) -> str:
    """Drop one layer of surrounding quotes, tolerating a missing opening/closing one."""
    text = text.strip()
    if text[:1] in "\"“":
        text = text[1:]
    if text[-1:] in "\"”":
        text = text[:-1]
    return text.strip()


def render_madial_turn(raw: str, index: int, user_name: str) -> str:
    """Render one dialogue entry as ``"Speaker: text"``.

    Entries look like ``<Bart>:"..."`` (zh) or ``<Bart>: "..."`` (en); a few English
    ones lack the tag (``"..."`` or ``<...>`` around the whole text). Untagged entries get
    their speaker from the alternation: odd index = the user, even = ``Assistant``.
    """
    text = raw.strip()
    m = _SPEAKER_TAG.match(text)
    if m:
        speaker, body = m.group(1).strip(), text[m.end():]
    else:
        speaker = user_name if index % 2 == 1 else "Assistant"
        body = text[1:-1] if text.startswith("<") and text.endswith(">") else text
    return f"{speaker}: {_strip_quotes(body)}"


def madial_query_text(dialogue: list[str], test_turn: int | list[int], user_name: str) -> str:
    """Build the query ``dialogue[1:min(test-turn)]`` (``<BOD>`` at 0) as newline-joined lines."""
    turns = test_turn if isinstance(test_turn, list) else [test_turn]
    end = min(int(t) for t in turns)
    return "\n".join(render_madial_turn(dialogue[i], i, user_name) for i in range(1, end))


def _user_name(dialogue: list[str]) -> str:
    """Return the first non-Assistant speaker tag in a dialogue, else ``"User"``."""
    for entry in dialogue[1:]:
        m = _SPEAKER_TAG.match(entry.strip())
        if m and m.group(1).strip() != "Assistant":
            return m.group(1).strip()
    return "User"


def _madial_date(text: str) -> datetime:
    """Parse a MADial ``YYYY-MM-DD`` memory time to midnight UTC."""
    return datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)


def load_madial(root: str | Path, lang: str) -> list[StoreSpec]:
    """Load MADial-Bench for ``lang`` ("zh" or "en") into one StoreSpec per user.

    The English memory file has no ``user-id``; it is taken from the Chinese memory file
    by memory id.
    """
    if lang not in ("zh", "en"):
        raise ValueError(f"lang must be 'zh' or 'en', not {lang!r}")
    root = Path(root)
    memory = _read_madial_memory(root / lang / f"MADial-Bench-{lang}-memory.json")
    dialogues = _read_jsonl(root / lang / f"MADial-Bench-{lang}-dialogue.json")
    owners = memory if lang == "zh" else _read_madial_memory(root / "zh" / "MADial-Bench-zh-memory.json")
    by_user: dict[str, list[Record]] = {}
    for mid, mem in memory.items():
        uid = mem.get("user-id", owners.get(mid, {}).get("user-id"))
        if uid is None:
            raise ValueError(f"MADial {lang} memory {mid!r} has no user-id (not even in zh)")
        rec = Record(id=mid, content=str(mem["event"]).strip(), created_at=_madial_date(mem["time"]))
        by_user.setdefault(str(uid), []).append(rec)
    queries: dict[str, list[Query]] = {uid: [] for uid in by_user}
    reasons: dict[str, Counter[str]] = {uid: Counter() for uid in by_user}
    for di, dia in enumerate(dialogues):
        uid = str(dia["user-id"])
        records = by_user.setdefault(uid, [])
        queries.setdefault(uid, [])
        reasons.setdefault(uid, Counter())
        gold = list(dict.fromkeys(str(g) for g in dia.get("relevant-id") or []))
        reason = _skip_reason(gold, {r.id for r in records})
        if reason:
            reasons[uid][reason] += 1
            continue
        text = madial_query_text(dia["dialogue"], dia["test-turn"], _user_name(dia["dialogue"]))
        now = max(r.created_at for r in records)
        queries[uid].append(Query(qid=f"madial-{lang}:{dia.get('id', di)}", query=text,
                                  gold=gold, category="all", now=now))
    return [
        StoreSpec(name=f"madial-{lang}-user{uid}", records=by_user[uid], queries=queries[uid],
                  skip_reasons=dict(reasons[uid]))
        for uid in sorted(by_user, key=lambda u: (len(u), u))
    ]


def score_ranking(ranked_ids: list[str], gold: list[str]) -> dict[str, float]:
    """Score one ranking: ``r@5``/``r@10`` = share of gold ids in the top k; ``mrr@10``."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("gold must not be empty")
    out: dict[str, float] = {}
    for k in (5, 10):
        out[f"r@{k}"] = len(gold_set & set(ranked_ids[:k])) / len(gold_set)
    out["mrr@10"] = next(
        (1.0 / rank for rank, rid in enumerate(ranked_ids[:10], start=1) if rid in gold_set), 0.0
    )
    return out


def aggregate(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Average metric dicts per category and ``"overall"``; each entry carries a count ``n``."""
    groups: dict[str, list[dict[str, float]]] = {}
    for category, metrics in rows:
        if category == "overall":
            raise ValueError('"overall" is reserved, not a category')
        groups.setdefault(category, []).append(metrics)
    groups["overall"] = [metrics for _, metrics in rows]
    out: dict[str, dict[str, float]] = {}
    for category, items in groups.items():
        keys = list(dict.fromkeys(k for m in items for k in m))
        out[category] = {k: sum(m.get(k, 0.0) for m in items) / len(items) for k in keys}
        out[category]["n"] = len(items)
    return out
