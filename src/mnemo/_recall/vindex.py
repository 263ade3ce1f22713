"""The vector channel: an in-memory float32 matrix kept in step with the store.

Why not an ANN index: an exact scan of 100k × 384 float32 takes ~6 ms with numpy's BLAS on two
cores, inside the 10 ms budget, with recall 1.0 by construction and no second file to keep
consistent or encrypted. The matrix is derived data: it is refreshed incrementally from the
store's change counter (``seq``), so writes by other processes show up on the next query, and
rebuilt whole when the generation changes (reindex, purge).

The whole :class:`~mnemo._stores.base.Filters` object is applied here: scope, status, type,
creation time and expiry are columns beside the matrix, tags an inverted list (tag → rows), so a
filtered query masks rows before taking the top k. Post-filtering a shortlist would lose the one
tagged memory among hundreds of closer untagged ones.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

from .._base.models import parse_time
from .._stores.base import Filters


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
        self._valid = np.zeros(0, bool)
        self._tagged: dict[str, set[int]] = {}  # tag → row positions
        self._tags_of: dict[int, tuple[str, ...]] = {}  # row position → its tags (to move it on an edit)
        self._pos: dict[int, int] = {}
        self._codes: dict[str, dict[str, int]] = {"scope": {}, "type": {}, "status": {}}

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
        self._expires = grown(self._expires)
        self._cap = cap

    def apply(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Apply ``(pk, seq, scope, type, status, created_epoch, expires_epoch|None, tags_json,
        vector|None)`` rows (the store's ``vector_rows``); returns how many."""
        rows = list(rows)
        if self._n == 0 and rows:
            return self._load(rows)
        count = 0
        for pk, seq, scope, mtype, status, created, expires, tags, blob in rows:
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
            self._set_tags(pos, tags)
            self._valid[pos] = True
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
        for pos, r in enumerate(good):
            if r[7] not in (None, "[]"):
                self._set_tags(pos, r[7])
        self._valid[:n] = True
        self._pos = {int(r[0]): i for i, r in enumerate(good)}
        self._n = n
        return len(rows)

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
            m &= np.isin(column[:n], codes) if len(codes) > 1 else column[:n] == codes[0]
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

    def search(self, query: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[int, float]]:
        """Top ``k`` ``(pk, cosine)`` among the rows that pass ``filters``, best first (exact)."""
        n = self._n
        if n == 0 or k <= 0:
            return []
        scores = self._matrix[:n] @ query.astype(np.float32, copy=False)
        scores = np.where(self.mask(filters) if filters is not None else self._valid[:n], scores, -np.inf)
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
