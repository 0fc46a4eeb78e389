"""Embeddings of task and insight texts: unit vectors, compared by cosine.

`HashingEmbedder` (model name "hashing") is a bag of word unigrams and bigrams hashed into a
fixed number of dimensions: no dependency, deterministic, good enough for tests and for
near-duplicate checks. Any other name is a sentence-transformers model (the offline MiniLM by
default), loaded on first use; without sentence-transformers it falls back to hashing.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from typing import Protocol

HASHING = "hashing"
_WORD = re.compile(r"[a-z0-9]+")


class Embedder(Protocol):
    """`embed(texts)` returns one unit vector (a list of floats) per text, in order; the same
    text always gets the same vector. It never raises for ordinary text."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    name = HASHING

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._cache: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        words = _WORD.findall(text.lower())
        vec = [0.0] * self.dim
        for token in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        out = normalize(vec)
        self._cache[text] = out
        return out


class SentenceEmbedder:
    """A sentence-transformers model, loaded on the first call (it takes seconds)."""

    def __init__(self, model: str) -> None:
        self.name = model
        self._cache: dict[str, list[float]] = {}
        self._fallback: HashingEmbedder | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            from moscopt.optimizer.similarity import _encoder

            encoder = _encoder(self.name)
            if encoder is None:
                self._fallback = self._fallback or HashingEmbedder()
                vectors = self._fallback.embed(todo)
            else:
                raw = encoder.encode(list(todo), normalize_embeddings=True)
                vectors = [[float(x) for x in row] for row in raw]
            self._cache.update(zip(todo, vectors, strict=True))
        return [self._cache[t] for t in texts]


def make_embedder(model: str) -> Embedder:
    return HashingEmbedder() if model in (HASHING, "difflib") else SentenceEmbedder(model)


def normalize(vec: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec] if norm > 0 else list(vec)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is zero."""
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)
