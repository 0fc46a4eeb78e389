"""The hashing embedder: signed feature hashing of a text's words and word pairs.

No dependency and no model: deterministic across processes and machines, for tests, small
template-like benchmarks and near-duplicate checks (model names `hashing`, 256 dimensions, and
`hashing-<dim>`). Words are runs of letters or of digits, lowercased. By default every number
is the one token `0`, so tasks of one template land close together whatever their numbers (the
familiarity router's features; its exports name them `hashing-<dim>`); with `numbers` each
number is a word of its own (the niches and the execution memory, where "x = 12" and "x = 17"
are different findings).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.embedding.base import HASHING, HASHING_DIM

if TYPE_CHECKING:
    from moscopt.embedding.base import Vector

_WORD_RE = re.compile(r"[a-z]+|[0-9]+")


class HashingEmbedder:
    """Each word and word pair adds +1 or -1 (by its hash) to one of `dim` coordinates."""

    def __init__(self, dim: int = HASHING_DIM, *, numbers: bool = False) -> None:
        if dim < 8:
            raise ValueError("the hashing embedder needs at least 8 dimensions")
        self.dim = dim
        self.numbers = numbers
        self.name = f"{HASHING}-{dim}" + ("+numbers" if numbers else "")

    def encode(self, text: str) -> Vector:
        import numpy as np

        words = _WORD_RE.findall(text.lower())
        if not self.numbers:
            words = ["0" if w.isdigit() else w for w in words]
        grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        v = np.zeros(self.dim, dtype=np.float64)
        for g in grams:
            h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            v[0] = 1.0
            norm = 1.0
        out: Vector = (v / norm).astype(np.float32)
        return out

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        return [self.encode(t) for t in texts]
