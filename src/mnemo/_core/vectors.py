"""Vectors for :class:`mnemo.Mnemo`: the embedder's calls, checked, cached and kept apart per model.

``VectorOps`` is a mixin of :class:`mnemo.Mnemo`. Every vector a store keeps or compares comes
through here: ``_embed`` turns an engine failure or a wrong-dimension answer into an
:class:`~mnemo.errors.EmbedderError`; ``_vectors``/``_store_vectors`` put the per-text cache in
front of the model for writes; ``_query_vector`` remembers recent queries' vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._base import text as _text
from ..errors import EmbedderError, ModelMismatchError

if TYPE_CHECKING:
    from .mnemo import Mnemo

#: recent queries whose vectors are kept (a search page asks again as its filters change)
QUERY_CACHE = 256


class VectorOps:
    """The embedding plumbing of :class:`mnemo.Mnemo` (private methods only)."""

    def _check_model(self: "Mnemo") -> None:
        """Refuse to mix vectors of two models; the store remembers which one built its index."""
        stored = self.store.get_meta("embedder")
        name = self.embedder.name
        if stored is not None and stored != name:
            raise ModelMismatchError(
                f"this store's index was built with {stored}; the configured model is {name}. "
                f"Run `mnemo reindex` to rebuild the index with the configured model, or select the store's model (--model)"
            )

    def _embed(self: "Mnemo", texts: Sequence[str], *, query: bool) -> np.ndarray:
        """The model's vectors for ``texts``, or an :class:`EmbedderError` that says what went wrong."""
        emb = self.embedder
        n = len(texts)
        try:
            vecs = emb.embed_queries(texts) if query else emb.embed_passages(texts)
        except EmbedderError:
            raise
        except Exception as exc:  # an engine failure is an embedder error, not a traceback
            raise EmbedderError(f"embedding with {emb.name} failed: {exc}") from exc
        stored_dim = self.store.get_meta("dim")
        if vecs.shape[0] != n:
            raise EmbedderError(f"{emb.name} returned {vecs.shape[0]} vectors for {n} texts")
        if stored_dim is not None and vecs.shape[1] != int(stored_dim) and self.store.get_meta("embedder") == emb.name:
            raise EmbedderError(
                f"{emb.name} returned {vecs.shape[1]}-d vectors but the store's index is {stored_dim}-d; run `mnemo reindex`"
            )
        return vecs

    def _query_vector(self: "Mnemo", query: str) -> np.ndarray:
        """A query's vector, remembered for the last few hundred queries: a search page asks the
        same question again as its filters change, and embedding is most of a search's time."""
        key = (self.embedder.name, query)
        vec = self._query_cache.get(key)
        if vec is None:
            vec = self._embed([query], query=True)[0]
            if len(self._query_cache) >= QUERY_CACHE:
                self._query_cache.pop(next(iter(self._query_cache)))
            self._query_cache[key] = vec
        return vec

    def _vectors(self: "Mnemo", texts: Sequence[str], *, defer: bool = False) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The embedding cache in front of the model: the texts' hashes, every vector by hash,
        and the ones just computed, which the caller stores inside its write transaction with
        :meth:`_store_vectors` (each distinct text is embedded once). ``defer``: compute none;
        the texts the cache lacks are left without a vector (``Mnemo.fill_vectors`` embeds them
        later)."""
        hashes = [_text.text_hash(t) for t in texts]
        cached = self.store.get_embeddings(self.embedder.name, hashes)
        todo = list(dict.fromkeys(h for h in hashes if h not in cached))
        fresh: dict[str, np.ndarray] = {}
        if todo and not defer:
            text_of = dict(zip(hashes, texts))
            fresh = dict(zip(todo, self._embed([text_of[h] for h in todo], query=False)))
        vectors = {h: np.frombuffer(blob, dtype=np.float32) for h, blob in cached.items()}
        vectors.update(fresh)
        return hashes, vectors, fresh

    def _store_vectors(self: "Mnemo", fresh: dict[str, np.ndarray]) -> None:
        """Store newly computed vectors (inside a transaction), claiming the model on the first."""
        if fresh:
            dim = len(next(iter(fresh.values())))
            self._claim_model(dim)
            self.store.put_embeddings(self.embedder.name, [(h, dim, v.tobytes()) for h, v in fresh.items()])

    def _claim_model(self: "Mnemo", dim: int) -> None:
        """Record the model identity on the first vector written (inside a transaction)."""
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", self.embedder.name)
            self.store.set_meta("dim", str(dim))
