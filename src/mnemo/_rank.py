"""Fusion and scoring: how recall turns two channels' candidates into one ranked list.

``relevance`` fuses the channels on an absolute 0..1 scale (so one relevance floor means the
same thing for every query and every model):

* dense: ``soft((cosine - baseline - floor) / scale)``, where ``baseline`` is the query's mean
  cosine with unrelated anchor sentences and floor/scale are the model's calibration
  (``mnemo._embed.Calibration``), ``soft(x) = x / (1 + x)``;
* lexical: ``soft(bm25 / sqrt(query terms))`` — BM25 grows with the number of query terms, so
  long queries (a pasted conversation) would otherwise saturate it;
* hybrid: ``max(w * dense + (1 - w) * lexical, LEXICAL_ALONE * lexical)`` with the model's
  ``dense_weight`` w: a strong keyword match (a name, an error code, a translated term) counts
  even when the embedding model does not know the word.

``score`` multiplies relevance by bounded factors, each shown by ``--explain``: importance,
confidence, recency (exponential decay with a half-life, relative to ``now``), access count, and
a boost when the memory falls inside a time the query names ("上周", "last week", "in May").
The factors can reorder close calls but cannot lift an irrelevant memory far over the floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from ._embed import Calibration
from ._models import Hit, Memory, parse_time

#: default relevance floor on ``score``: below it a memory is noise, not memory
DEFAULT_MIN_SCORE = 0.15
TIME_BOOST = 1.3
#: how much a lexical match alone can weigh in hybrid mode (0.4 costs ≤ 0.003 R@5 on the benchmarks)
LEXICAL_ALONE = 0.4


@dataclass
class Weights:
    """Tunable ranking knobs (each is a documented setting)."""

    half_life_days: float = 90.0
    min_score: float = DEFAULT_MIN_SCORE


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


def score_candidates(
    memories: dict[int, Memory],
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
) -> list[Hit]:
    """Score every candidate and return hits sorted best first (no floor applied)."""
    now_ts = now.timestamp()
    half_life = max(weights.half_life_days, 0.01) * 86400.0
    hits: list[Hit] = []
    for pk, mem in memories.items():
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
            relevance = max(w * d_rel + (1.0 - w) * l_rel, LEXICAL_ALONE * l_rel)
        created = parse_time(mem.created_at).timestamp()
        last_use = max(created, parse_time(mem.last_accessed_at).timestamp() if mem.last_accessed_at else created)
        age = max(0.0, now_ts - last_use)
        recency = 0.5 ** (age / half_life)
        f_importance = 0.8 + 0.4 * mem.importance
        f_confidence = 0.8 + 0.2 * mem.confidence
        f_recency = 0.9 + 0.1 * recency
        f_access = 1.0 + min(0.1, 0.03 * math.log1p(mem.access_count))
        in_window = window is not None and window[0] <= created < window[1]
        f_time = TIME_BOOST if in_window else 1.0
        score = relevance * f_importance * f_confidence * f_recency * f_access * f_time
        info = None
        if explain:
            info = {
                "similarity": None if cos is None else round(cos, 4),
                "baseline": round(baseline, 4),
                "bm25": round(lex, 4),
                "dense_relevance": round(d_rel, 4),
                "lexical_relevance": round(l_rel, 4),
                "relevance": round(relevance, 4),
                "importance_factor": round(f_importance, 4),
                "confidence_factor": round(f_confidence, 4),
                "recency_factor": round(f_recency, 4),
                "access_factor": round(f_access, 4),
                "time_factor": f_time,
                "score": round(score, 4),
            }
        hits.append(Hit(memory=mem, score=score, similarity=cos, explain=info))
    hits.sort(key=lambda h: (-h.score, h.memory.id))
    return hits
