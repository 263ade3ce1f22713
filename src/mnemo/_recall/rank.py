"""Fusion and scoring: how recall turns two channels' candidates into one ranked list.

``relevance`` fuses the channels on an absolute 0..1 scale (so one relevance floor means the
same thing for every query and every model):

* dense: ``soft((cosine - baseline - floor) / scale)``, where ``baseline`` is the query's mean
  cosine with unrelated anchor sentences and floor/scale are the model's calibration
  (``mnemo._recall.embed.Calibration``), ``soft(x) = x / (1 + x)``;
* lexical: ``soft(bm25 / sqrt(query terms))`` — BM25 grows with the number of query terms, so
  long queries (a pasted conversation) would otherwise saturate it;
* hybrid: ``max(w * dense + (1 - w) * lexical, LEXICAL_ALONE * lexical)`` with the model's
  ``dense_weight`` w: a strong keyword match (a name, an error code, a translated term) counts
  even when the embedding model does not know the word. A memory that names the query's person,
  place or product in the other script (``named``: :mod:`mnemo._recall.names`, and the glossary's
  names section) takes its lexical relevance whole: the model cannot see that 王志远 is Wang
  Zhiyuan or 支付宝 Alipay, so its low cosine says nothing against the match.

``score`` multiplies relevance by bounded factors, each shown by ``--explain``: importance,
confidence, recency (exponential decay with a half-life, relative to ``now``), access count, and
a boost when the memory falls inside a time the query names ("上周", "last week", "in May").
The factors can reorder close calls but cannot lift an irrelevant memory far over the floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .embed import Calibration

#: default relevance floor on ``score``: below it a memory is noise, not memory
DEFAULT_MIN_SCORE = 0.15
TIME_BOOST = 1.3
#: the weight of a memory nobody has used for ``decay_days`` (DESIGN: decay before archive)
STALE_FACTOR = 0.85
#: how much a lexical match alone can weigh in hybrid mode (0.4 costs ≤ 0.003 R@5 on the benchmarks)
LEXICAL_ALONE = 0.4
#: the weight of a global memory in a project's recall: at equal relevance the project's own
#: memory comes first ("最低支持的 Rust 版本" in project:ledger: the project's "Rust 1.75 or newer",
#: not the user's global "learn Rust this year"), while a clearly better global one still wins
GLOBAL_IN_PROJECT = 0.85


@dataclass
class Weights:
    """Tunable ranking knobs (each is a documented setting)."""

    half_life_days: float = 90.0
    min_score: float = DEFAULT_MIN_SCORE
    #: not used (accessed, or stored) for this many days: down-weighted, unless important or pinned
    decay_days: float = 90.0


def _soft(x: float) -> float:
    return 0.0 if x <= 0 else x / (1.0 + x)


def dense_relevance(cos: float | None, baseline: float, cal: Calibration) -> float:
    """The dense channel's 0..1 relevance of a cosine, given the query's anchor baseline."""
    if cos is None:
        return 0.0
    return _soft((cos - baseline - cal.floor) / cal.scale)


def lexical_relevance(bm25: float | None, n_terms: int) -> float:
    """The lexical channel's 0..1 relevance of a (positive) BM25 score for an n-term query."""
    if not bm25 or bm25 <= 0:
        return 0.0
    return _soft(bm25 / math.sqrt(max(n_terms, 1)))


@dataclass
class Scored:
    """One candidate's final score (``pk`` is the store's row key)."""

    pk: int
    score: float
    similarity: float | None
    explain: dict[str, Any] | None


def rounded(explain: dict[str, Any] | None) -> dict[str, Any] | None:
    """An explain breakdown as shown: each number to 4 decimals."""
    if explain is None:
        return None
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in explain.items()}


def score_candidates(
    rows: dict[int, tuple[Any, ...]],
    cosines: dict[int, float],
    bm25: dict[int, float],
    *,
    mode: str,
    calibration: Calibration,
    baseline: float,
    n_terms: int,
    now: datetime,
    weights: Weights,
    window: tuple[float, float] | None,
    explain: bool,
    asked: frozenset[str] = frozenset(),
    home: str | None = None,
    named: frozenset[int] = frozenset(),
) -> list[Scored]:
    """Score candidates given as ``pk -> (importance, confidence, access_count, created_epoch,
    last_accessed_epoch, stored_epoch, pinned, type, scope)`` and return them best first (no
    floor applied). ``asked``: the memory types the query asks for (``mnemo._recall.intent``);
    ``home``: the project a project-scoped recall is made in (its memories before global ones);
    ``named``: the memories that name one of the query's names in the other script."""
    now_ts = now.timestamp()
    half_life = max(weights.half_life_days, 0.01) * 86400.0
    out: list[Scored] = []
    stale_after = weights.decay_days * 86400.0
    from .intent import TYPE_BOOST

    for pk, (importance, confidence, access_count, created, last_access, stored, pinned, kind, scope) in rows.items():
        cos = cosines.get(pk)
        lex = bm25.get(pk, 0.0)
        d_rel = dense_relevance(cos, baseline, calibration)
        l_rel = lexical_relevance(lex, n_terms)
        if mode == "vector":
            relevance = d_rel
        elif mode == "fts":
            relevance = l_rel
        else:
            w = calibration.dense_weight
            relevance = max(w * d_rel + (1.0 - w) * l_rel, (1.0 if pk in named else LEXICAL_ALONE) * l_rel)
        last_use = max(created, last_access or created)
        recency = 0.5 ** (max(0.0, now_ts - last_use) / half_life)
        f_importance = 0.8 + 0.4 * importance
        f_confidence = 0.8 + 0.2 * confidence
        f_recency = 0.9 + 0.1 * recency
        f_access = 1.0 + min(0.1, 0.03 * math.log1p(access_count))
        f_time = TIME_BOOST if window is not None and window[0] <= created < window[1] else 1.0
        unused = now_ts - max(stored, last_access or stored)
        f_stale = STALE_FACTOR if unused > stale_after and importance < 0.8 and not pinned else 1.0
        f_type = TYPE_BOOST if kind in asked else 1.0
        f_scope = GLOBAL_IN_PROJECT if home is not None and scope == "global" else 1.0
        score = relevance * f_importance * f_confidence * f_recency * f_access * f_time * f_stale * f_type * f_scope
        info = None
        if explain:
            # raw here, rounded for the few hits returned (``rounded``): most candidates are dropped
            info = {"similarity": cos, "baseline": baseline, "bm25": lex, "dense_relevance": d_rel, "lexical_relevance": l_rel,
                    "relevance": relevance, "importance_factor": f_importance, "confidence_factor": f_confidence,
                    "recency_factor": f_recency, "access_factor": f_access, "time_factor": f_time, "stale_factor": f_stale,
                    "type_factor": f_type, "scope_factor": f_scope, "score": score}
        out.append(Scored(pk, score, cos, info))
    out.sort(key=lambda s: (-s.score, -s.pk))
    return out
