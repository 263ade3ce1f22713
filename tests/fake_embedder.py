"""The one small deterministic fake embedder every fast test uses (never a shipped default).

A hashed bag of words over mnemo's own tokenizer: texts sharing words are similar, texts
sharing none are orthogonal. Real-model behaviour is covered by tests marked ``model``.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from mnemo import _text
from mnemo._embed import Calibration

DIM = 256


class FakeEmbedder:
    name = "fake-hash-256"
    dim = DIM
    calibration = Calibration(floor=0.05, scale=0.3, dense_weight=0.7, duplicate=0.9, related=0.35)

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(DIM, np.float32)
        for tok in _text.index_tokens(text).split():
            h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
            v[h % DIM] += 1.0 if (h >> 32) & 1 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.vstack([self._vec(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    embed_passages = embed_queries


class WrongDimEmbedder(FakeEmbedder):
    """Claims the fake model's identity but returns 32-d vectors (a broken model)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 32), np.float32) / np.sqrt(32)

    embed_passages = embed_queries


OFF_TOPIC = ("knitting patterns", "bread baking", "violin lessons", "giraffe", "tulips", "origami cranes", "penguin",
             "sailing knots", "pottery glaze", "chess endgame", "opera tickets", "marathon training")


def unrelated_query(texts: list[str]) -> str:
    """An off-topic query sharing nothing with ``texts`` even under this embedder, whose hashed
    buckets make some unrelated words collide (which words depends on the tokenizer)."""
    emb = FakeEmbedder()
    vecs = emb.embed_passages(texts)
    for q in OFF_TOPIC:
        if float((vecs @ emb.embed_queries([q])[0]).max()) <= 0.0:
            return q
    raise AssertionError("every off-topic candidate collides with the memories under the fake embedder: add candidates")
