"""MinHash sketches of texts: the likely most similar pairs of a large pool, without comparing
every pair.

A text's sketch is, for each of `PERMUTATIONS` hash functions, the least hash of its word
shingles (`SHINGLE` words in a row, crc32 of their bytes, then `a * x + b mod 2**32` with odd
`a`, a permutation of the 32-bit values). The share of equal entries of two sketches estimates
the Jaccard similarity of their shingle sets (standard error at most 0.5 / sqrt(PERMUTATIONS),
0.0625 here). Sketching is linear in the text; comparing all pairs of n sketches is
n * n * PERMUTATIONS byte comparisons in numpy (n = 512: 17 million, milliseconds), against
n * (n - 1) / 2 SequenceMatcher ratios (each milliseconds on a skill body). Everything is a
pure function of the texts (fixed seeds), so a resumed run nominates the same pairs.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

PERMUTATIONS = 64
SHINGLE = 3
_MASK = 0xFFFFFFFF


def _coefficients() -> tuple[list[int], list[int]]:
    rng = random.Random(20240601)  # fixed: a sketch depends on the text alone
    return (
        [rng.getrandbits(32) | 1 for _ in range(PERMUTATIONS)],
        [rng.getrandbits(32) for _ in range(PERMUTATIONS)],
    )


_A, _B = _coefficients()


def shingles(text: str) -> list[int]:
    """crc32 of each run of `SHINGLE` words of `text` (lowercased); the whole text's words when
    it has fewer."""
    words = text.lower().split()
    if len(words) < SHINGLE:
        return [zlib.crc32(" ".join(words).encode("utf-8", "surrogatepass"))]
    return [
        zlib.crc32(" ".join(words[i : i + SHINGLE]).encode("utf-8", "surrogatepass"))
        for i in range(len(words) - SHINGLE + 1)
    ]


@lru_cache(maxsize=4096)  # a pool's unchanged skills are sketched once (never mutated)
def sketch(text: str) -> npt.NDArray[np.uint32]:
    """The `PERMUTATIONS` least hashes of `text`'s shingles."""
    import numpy as np

    x = np.unique(np.asarray(shingles(text), dtype=np.uint64))
    a = np.asarray(_A, dtype=np.uint64)[:, None]
    b = np.asarray(_B, dtype=np.uint64)[:, None]
    return ((a * x[None, :] + b) & _MASK).min(axis=1).astype(np.uint32)


def estimated_jaccard(texts: Sequence[str]) -> npt.NDArray[np.float64]:
    """The n x n matrix of estimated Jaccard similarities of the texts' shingle sets (1 on the
    diagonal)."""
    import numpy as np

    if not texts:
        return np.zeros((0, 0))
    sketches = np.stack([sketch(t) for t in texts])
    out = np.empty((len(texts), len(texts)))
    for i in range(len(texts)):  # one row at a time: memory n * PERMUTATIONS, not n^2 * P
        out[i] = (sketches == sketches[i]).mean(axis=1)
    return out


def ranked_pairs(texts: Sequence[str]) -> list[tuple[int, int]]:
    """Every pair (i < j) of `texts`, the highest estimated Jaccard first (ties by position)."""
    import numpy as np

    n = len(texts)
    if n < 2:
        return []
    sims = estimated_jaccard(texts)
    i, j = np.triu_indices(n, k=1)
    order = np.lexsort((j, i, -sims[i, j]))  # last key first: similarity, then i, then j
    return [(int(i[k]), int(j[k])) for k in order]
