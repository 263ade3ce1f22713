"""The vector channel: an in-memory float32 matrix kept in step with the store.

Why not an ANN index: a scan is exact or nearly so by construction and needs no second file to
keep consistent or encrypted. The matrix is derived data: it is refreshed incrementally from the
store's change counter (``seq``), so writes by other processes show up on the next query, and
rebuilt whole when the generation changes (reindex, purge).

From ``QUANTISED_FROM`` rows on, the scan is two passes: int8 codes of every row (centred, each
dimension scaled to its range) are scored first with SimSIMD's integer dot products, and the best
``shortlist`` rows are rescored exactly in float32. At 100k × 384 that is ~1.9 ms on one thread
(~0.9 on two) against ~6 ms for numpy's float32 product (a quarter of the bytes, and integer
SIMD); on 17,779 real e5 vectors
a shortlist of twice k held every exact top-10 and top-100 (``bench/README.md``). Binary sign
codes were measured too and lost (recall@10 0.82 with 6 % of the rows rescored): e5's vectors
share most of their direction, and one bit per dimension keeps too little of the rest.

The whole :class:`~mnemo._stores.base.Filters` object is applied here: scope, status, type,
creation time and expiry are columns beside the matrix, tags an inverted list (tag → rows), so a
filtered query masks rows before taking the top k. Post-filtering a shortlist would lose the one
tagged memory among hundreds of closer untagged ones.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Iterable

import numpy as np

from .._base.models import parse_time
from .._stores.base import Filters

try:
    import simsimd as _simd  # integer SIMD dot products; without it (an unusual platform) the scan stays exact
except ImportError:  # pragma: no cover
    _simd = None

#: rows from which the scan runs on int8 codes first (below it the exact scan is ~1 ms or less)
QUANTISED_FROM = 20_000
#: rows rescored exactly: this many times k, and at least ``SHORTLIST_MIN``
SHORTLIST_FACTOR = 2
SHORTLIST_MIN = 200
#: threads for the first pass when nothing runs beside it (100k rows: 1.9 ms on one, 0.9 ms on
#: two); beside the full-text search one (two cores: 6.5 against 8.6 ms for a hybrid recall)
_THREADS = max(1, min(os.cpu_count() or 1, 4))
#: the thread a large index scans on (see VectorIndex.start_search)
_WORKER: Any = None


def _any_of(column: np.ndarray, codes: list[int]) -> np.ndarray:
    """``np.isin(column, codes)``, fast for the few codes a filter names: one comparison per
    code (~3 µs each at 100k rows) where np.isin sorts (~0.5 ms) and a lookup table gathers (~0.2)."""
    if len(codes) > 8:
        return np.isin(column, codes)
    out = column == codes[0]
    for code in codes[1:]:
        out |= column == code
    return out


def _epoch(text: str | None) -> float | None:
    return None if not text else parse_time(text).timestamp()


class VectorIndex:
    """Rows: one per memory that has a vector for ``model``; columns: the filter fields."""

    def __init__(self, model: str, dim: int):
        self.model = model
        self.dim = dim
        self.generation: str | None = None
        self.seq = 0
        self._n = 0
        self._cap = 0
        self._matrix = np.zeros((0, dim), np.float32)
        self._pk = np.zeros(0, np.int64)
        self._scope = np.zeros(0, np.int32)
        self._type = np.zeros(0, np.int32)
        self._status = np.zeros(0, np.int8)
        self._created = np.zeros(0, np.float64)
        self._expires = np.zeros(0, np.float64)  # +inf: never
        self._importance = np.zeros(0, np.float32)
        self._valid = np.zeros(0, bool)
        self._tagged: dict[str, set[int]] = {}  # tag → row positions
        self._tags_of: dict[int, tuple[str, ...]] = {}  # row position → its tags (to move it on an edit)
        self._pos: dict[int, int] = {}
        self._codes: dict[str, dict[str, int]] = {"scope": {}, "type": {}, "status": {}}
        self._int8: Int8Codes | None = None  # the first pass's codes, from QUANTISED_FROM rows on

    def __len__(self) -> int:
        return int(self._valid[: self._n].sum())

    def _code(self, kind: str, value: str) -> int:
        table = self._codes[kind]
        if value not in table:
            table[value] = len(table)
        return table[value]

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, self._cap * 2, 1024)

        def grown(a: np.ndarray) -> np.ndarray:
            out = np.zeros((cap, *a.shape[1:]), a.dtype)
            out[: self._n] = a[: self._n]
            return out

        self._matrix = grown(self._matrix)
        self._pk, self._scope, self._type = grown(self._pk), grown(self._scope), grown(self._type)
        self._status, self._created, self._valid = grown(self._status), grown(self._created), grown(self._valid)
        self._expires, self._importance = grown(self._expires), grown(self._importance)
        if self._int8 is not None:
            self._int8.codes = grown(self._int8.codes)
        self._cap = cap

    def apply(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Apply ``(pk, seq, scope, type, status, created_epoch, expires_epoch|None, tags_json,
        vector|None, importance)`` rows (the store's ``vector_rows``); returns how many."""
        rows = list(rows)
        if self._n == 0 and rows:
            return self._load(rows)
        count = 0
        changed: list[int] = []
        for pk, seq, scope, mtype, status, created, expires, tags, blob, importance in rows:
            count += 1
            self.seq = max(self.seq, int(seq))
            pos = self._pos.get(pk)
            if pos is None:
                if blob is None:
                    continue
                self._grow(self._n + 1)
                pos = self._n
                self._n += 1
                self._pos[pk] = pos
                self._pk[pos] = pk
            if blob is None:
                self._valid[pos] = False
                continue
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] != self.dim:
                self._valid[pos] = False
                continue
            self._matrix[pos] = vec
            self._scope[pos] = self._code("scope", scope)
            self._type[pos] = self._code("type", mtype)
            self._status[pos] = self._code("status", status)
            self._created[pos] = float(created or 0.0)
            self._expires[pos] = math.inf if expires is None else float(expires)
            self._importance[pos] = float(importance or 0.0)
            self._set_tags(pos, tags)
            self._valid[pos] = True
            changed.append(pos)
        self._quantise(changed)
        return count

    def _set_tags(self, pos: int, tags_json: str | None) -> None:
        for tag in self._tags_of.pop(pos, ()):
            self._tagged[tag].discard(pos)
        tags = tuple(json.loads(tags_json or "[]"))
        if tags:
            self._tags_of[pos] = tags
            for tag in tags:
                self._tagged.setdefault(tag, set()).add(pos)

    def _load(self, rows: list[tuple[Any, ...]]) -> int:
        """First load, vectorised: one join of the blobs instead of a Python loop per row."""
        good = [r for r in rows if r[8] is not None and len(r[8]) == 4 * self.dim]
        self.seq = max(int(r[1]) for r in rows)
        n = len(good)
        if n == 0:
            return len(rows)
        self._grow(n)
        self._matrix[:n] = np.frombuffer(b"".join(r[8] for r in good), dtype=np.float32).reshape(n, self.dim)
        self._pk[:n] = [r[0] for r in good]
        self._scope[:n] = [self._code("scope", r[2]) for r in good]
        self._type[:n] = [self._code("type", r[3]) for r in good]
        self._status[:n] = [self._code("status", r[4]) for r in good]
        self._created[:n] = [float(r[5] or 0.0) for r in good]
        self._expires[:n] = [math.inf if r[6] is None else float(r[6]) for r in good]
        self._importance[:n] = [float(r[9] or 0.0) for r in good]
        for pos, r in enumerate(good):
            if r[7] not in (None, "[]"):
                self._set_tags(pos, r[7])
        self._valid[:n] = True
        self._pos = {int(r[0]): i for i, r in enumerate(good)}
        self._n = n
        self._quantise(range(n))
        return len(rows)

    def _quantise(self, changed: Iterable[int]) -> None:
        """Keep the int8 codes in step: fit them once the index is large enough, fit them again
        when it has doubled since (new rows may lie outside the ranges fitted), else encode the
        rows that changed."""
        n = self._n
        if _simd is None or n < QUANTISED_FROM:
            return
        if self._int8 is None or n >= 2 * self._int8.fitted_rows:
            self._int8 = Int8Codes(self._matrix[:n], self._valid[:n], self._cap)
            changed = range(n)
        positions = np.fromiter(changed, np.int64)
        if positions.size:
            self._int8.encode(self._matrix, positions)

    def mask(self, filters: Filters) -> np.ndarray:
        """Boolean mask of the rows that pass every filter."""
        n = self._n
        m = self._valid[:n].copy()
        for kind, values, column in (("scope", filters.scopes, self._scope), ("type", filters.types, self._type),
                                     ("status", list(filters.statuses), self._status)):
            if values is None or (kind != "scope" and not values):
                continue
            codes = [self._codes[kind][v] for v in values if v in self._codes[kind]]
            if not codes:
                return np.zeros(n, bool)
            m &= _any_of(column[:n], codes)
        for tag in filters.tags or ():  # every tag must be there
            rows = self._tagged.get(tag)
            if not rows:
                return np.zeros(n, bool)
            keep = np.zeros(n, bool)
            keep[list(rows)] = True
            m &= keep
        since, until, alive = _epoch(filters.since), _epoch(filters.until), _epoch(filters.alive_at)
        if since is not None:
            m &= self._created[:n] >= since
        if until is not None:
            m &= self._created[:n] < until
        if alive is not None:
            m &= self._expires[:n] > alive
        return m

    def most_important(self, filters: Filters, k: int) -> list[int]:
        """The ``k`` most important memories (pks) that pass ``filters``, the newest first among
        equals, as ``ORDER BY importance DESC, pk DESC`` would give them: a column in memory,
        where the store sorted every memory of a kind (60 ms at 100k, 0.6 s at 1M)."""
        keep = self.mask(filters)
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return []
        # one exact key: importance to a millionth, then pk (both below 2^31)
        key = np.rint(self._importance[rows].astype(np.float64) * 1e6).astype(np.int64) * (1 << 31) + self._pk[rows]
        if rows.size > k:
            best = np.argpartition(-key, k - 1)[:k]
            rows, key = rows[best], key[best]
        return [int(self._pk[i]) for i in rows[np.argsort(-key, kind="stable")]]

    def start_search(self, query: np.ndarray, k: int, filters: Filters | None = None) -> Callable[[], list[tuple[int, float]]]:
        """:meth:`search`, begun now and returned by the callable: a large index scans on a
        worker thread while the caller runs the full-text search. The caller must call it before
        the index changes.

        SimSIMD's ``cdist`` holds the GIL while it runs (a Python loop beside it ran at half its
        speed), so the two channels truly overlap only while the caller is inside SQLite, which
        lets go of it; measured at 100k, this still saves ~1 ms against scanning first on both
        cores, and starting the scan just before the full-text SQL instead saved nothing."""
        if self._int8 is None:
            hits = self.search(query, k, filters)
            return lambda: hits
        global _WORKER
        if _WORKER is None:
            from concurrent.futures import ThreadPoolExecutor

            _WORKER = ThreadPoolExecutor(1, thread_name_prefix="mnemo-scan")
        return _WORKER.submit(self.search, query, k, filters, threads=1).result

    def search(self, query: np.ndarray, k: int, filters: Filters | None = None, *, threads: int = _THREADS) -> list[tuple[int, float]]:
        """Top ``k`` ``(pk, cosine)`` among the rows that pass ``filters``, best first: exact
        cosines, of every row or, past ``QUANTISED_FROM`` rows, of the first pass's shortlist."""
        n = self._n
        if n == 0 or k <= 0:
            return []
        query = query.astype(np.float32, copy=False)
        keep = self.mask(filters) if filters is not None else self._valid[:n]
        shortlist = max(SHORTLIST_FACTOR * k, SHORTLIST_MIN)
        if self._int8 is not None and n > shortlist and int(keep.sum()) > shortlist:
            rough = self._int8.scores(query, n, threads)
            rough[~keep] = -np.inf  # in place: the scores are a fresh array
            rows = np.argpartition(rough, n - shortlist)[n - shortlist:]
            exact = self._matrix[rows] @ query
            best = np.argsort(-exact, kind="stable")[:k]
            return [(int(self._pk[rows[i]]), float(exact[i])) for i in best]
        scores = np.where(keep, self._matrix[:n] @ query, -np.inf)
        k = min(k, n)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(self._pk[i]), float(scores[i])) for i in top if np.isfinite(scores[i])]

    def vectors(self, pks: list[int]) -> dict[int, np.ndarray]:
        """The stored vectors of those memories that have one."""
        return {pk: self._matrix[self._pos[pk]].copy() for pk in pks if pk in self._pos and self._valid[self._pos[pk]]}

    def similarity(self, query: np.ndarray, pks: list[int]) -> dict[int, float]:
        """Exact cosine of ``query`` with the given memories (those that have a vector)."""
        pos = [(pk, self._pos[pk]) for pk in pks if pk in self._pos and self._valid[self._pos[pk]]]
        if not pos:
            return {}
        sims = self._matrix[[p for _, p in pos]] @ query.astype(np.float32, copy=False)
        return {pk: float(s) for (pk, _), s in zip(pos, sims)}


class Int8Codes:
    """int8 codes of a float32 matrix for a first pass: each row's offset from the mean row,
    each dimension scaled so that its largest offset is ±127. The query is folded into the same
    units (``q / scale``, then rounded to int8 at its own range), so one integer dot product per
    row orders the rows as ``q · x`` would, up to rounding, which the exact rescoring removes."""

    def __init__(self, matrix: np.ndarray, valid: np.ndarray, capacity: int):
        """Fit on the ``valid`` rows of ``matrix`` (column-wise passes, no copy of the matrix)."""
        rows = matrix[valid] if not valid.all() else matrix
        self.centre = rows.mean(axis=0, dtype=np.float64).astype(np.float32)
        spread = np.maximum(rows.max(axis=0) - self.centre, self.centre - rows.min(axis=0))
        self.scale = np.where(spread > 0, 127.0 / np.maximum(spread, 1e-12), 0.0).astype(np.float32)
        self.fitted_rows = max(len(rows), 1)
        self.codes = np.zeros((capacity, matrix.shape[1]), np.int8)

    def encode(self, matrix: np.ndarray, positions: np.ndarray) -> None:
        """Code the rows of ``matrix`` at ``positions`` (values past the fitted range are clipped),
        a block at a time so the temporaries stay in cache."""
        for start in range(0, len(positions), 2048):
            at = positions[start:start + 2048]
            block = matrix[at] - self.centre
            block *= self.scale
            np.rint(block, out=block)
            np.clip(block, -127, 127, out=block)
            self.codes[at] = block

    def scores(self, query: np.ndarray, n: int, threads: int) -> np.ndarray:
        """Approximate ``q · x`` of the first ``n`` rows, less a constant (``q · centre``)."""
        weights = np.divide(query, self.scale, out=np.zeros_like(query), where=self.scale > 0)
        top = float(np.abs(weights).max()) or 1.0
        q8 = np.rint(weights * (127.0 / top)).astype(np.int8).reshape(1, -1)
        # a fresh result each call: SimSIMD 6.5's cdist(out=...) returns None without a reference
        # to it, and the interpreter aborts once None's count runs out
        return np.asarray(_simd.cdist(q8, self.codes[:n], metric="dot", out_dtype="float32", threads=threads))[0]
