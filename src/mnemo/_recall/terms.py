"""How many memories hold each query term, remembered between the questions of a warm process.

The full-text channel asks the store's index for document frequencies twice a question: to
leave out terms that a large share of a large store contains (FTS5 scores every row an OR-query
matches) and to keep only the spellings of a name that the store holds (``names.py``). Each
lookup reads the term's whole posting list (~0.1 ms for a word in 5 % of 100k rows, ten times
that at 1M), and a person's questions share most of their words, so the answers are kept.

Kept exactly: an exact count is good until the store changes (``max_seq`` or the index
generation moves), and a *common or not* verdict is good for longer, for as long as the rows
written since could not have moved the count across the line: every write moves ``max_seq`` up
by one and changes at most one row (a purge starts a new generation), so after ``w`` writes a
count ``d`` is within ``d ± w``. Both give the answer a fresh lookup would give.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._stores.base import Store

#: a query term found in more than this share of rows (and at least COMMON_MIN_ROWS) is left out
COMMON_SHARE = 0.05
COMMON_MIN_ROWS = 2000
#: when every term of a question is common, the rarest this many are searched for
RAREST_KEPT = 3
#: entries kept before the caches start again (a bound on a long-running service's memory)
MAX_TERMS = 50_000


class TermStats:
    """Document frequencies of query terms for one store, cached as the module docstring says."""

    def __init__(self) -> None:
        self._key: tuple[str, int] | None = None  # (generation, max_seq) the exact counts hold for
        self._exact: dict[str, int] = {}
        self._generation: str | None = None  # the generation the verdicts' counts were read in
        self._counted: dict[str, tuple[int, int]] = {}  # term → (count, max_seq when counted)

    def clear(self) -> None:
        """Forget every count (the store's file was replaced)."""
        self._key, self._exact = None, {}
        self._generation, self._counted = None, {}

    def doc_freqs(self, store: Store, terms: Sequence[str]) -> dict[str, int]:
        """``store.doc_freqs(terms)``, exact, remembered until the store changes."""
        return self._lookup(store, terms, (store.get_meta("generation") or "0", store.max_seq()))

    def drop_common(self, store: Store, terms: list[str], *, keep_rarest: bool = True) -> list[str]:
        """``terms`` without those found in more than ``COMMON_SHARE`` of a large store's rows.

        FTS5 scores and sorts every row an OR-query matches; at 100k memories a question's
        filler words match ~30 % of rows and cost ~35 ms, while their IDF adds almost nothing to
        the ranking. Small stores (under ``COMMON_MIN_ROWS`` per term) are untouched; when every
        term is common, the rarest few are kept (``keep_rarest``: a question's own words; the
        words it was translated into may all go)."""
        if len(terms) < (2 if keep_rarest else 1):
            return terms
        total = store.fts_row_count()
        limit = max(COMMON_MIN_ROWS, COMMON_SHARE * total)
        if total <= limit:
            return terms
        generation, seq = store.get_meta("generation") or "0", store.max_seq()
        if generation != self._generation or len(self._counted) > MAX_TERMS:
            self._generation, self._counted = generation, {}
        common: dict[str, bool] = {}
        for term in dict.fromkeys(terms):
            count, at = self._counted.get(term, (0, seq + 1))
            moved = seq - at  # writes since it was counted; negative: never counted (or rows went)
            if moved >= 0 and (count - moved > limit or count + moved <= limit):
                common[term] = count - moved > limit
        todo = [t for t in dict.fromkeys(terms) if t not in common]
        if todo:
            fresh = self._lookup(store, todo, (generation, seq))
            for term in todo:
                self._counted[term] = (fresh[term], seq)
                common[term] = fresh[term] > limit
        kept = [t for t in terms if not common[t]]
        if not kept and keep_rarest:
            df = self._lookup(store, terms, (generation, seq))
            kept = sorted(terms, key=lambda t: df[t])[:RAREST_KEPT]
        return kept

    def _lookup(self, store: Store, terms: Sequence[str], key: tuple[str, int]) -> dict[str, int]:
        if self._key != key or len(self._exact) > MAX_TERMS:
            self._key, self._exact = key, {}
        todo = [t for t in dict.fromkeys(terms) if t not in self._exact]
        if todo:
            self._exact.update(store.doc_freqs(todo))
        return {t: self._exact.get(t, 0) for t in terms}
