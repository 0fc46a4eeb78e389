"""The embedding seam: `Embedder`, its error, the model names everyone shares, and `cosine`.

An embedder turns a text into one unit-norm float32 vector and is a pure function of the text
(the same text always gives the same bytes, whatever was encoded before or with it), so a
resumed run sees exactly the vectors an uninterrupted one did. Two kinds exist
(`moscopt.embedding.make_embedder`): the hashing embedder (no dependency) and a
sentence-transformers model run in a process of its own.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_NAMES = (MINILM, "all-MiniLM-L6-v2")  # both load from the offline package
HASHING = "hashing"
DIFFLIB = "difflib"  # the diversity check's text ratio; an embedder given it hashes
HASHING_DIM = 256


class Embedder(Protocol):
    """Text to a unit-norm float32 vector; pure (same text, same bytes); may be slow (call it
    from a thread, never on a running event loop); raises `EmbedderUnavailable` if the model
    cannot be loaded, never for ordinary text."""

    name: str

    def encode(self, text: str) -> Vector: ...

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        """`[encode(t) for t in texts]`, the same bytes, possibly faster."""
        ...


class EmbedderUnavailable(RuntimeError):
    """The embedding model cannot be loaded (extra not installed, no such model, its process
    died)."""


def is_model(name: str) -> bool:
    """Whether `name` names a sentence-transformers model (not hashing, not difflib)."""
    return hashing_dim(name) is None and name != DIFFLIB


def hashing_dim(name: str) -> int | None:
    """The dimension `name` asks the hashing embedder for (`hashing`: 256, `hashing-<dim>`),
    None when it names no hashing embedder."""
    if name == HASHING:
        return HASHING_DIM
    head, _, dim = name.partition("-")
    return int(dim) if head == HASHING and dim.isdigit() else None


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cosine(a: Iterable[float], b: Iterable[float]) -> float:
    """Cosine similarity of two vectors (lists or arrays); 0.0 when either is zero."""
    xs, ys = [float(x) for x in a], [float(y) for y in b]
    na = math.sqrt(sum(x * x for x in xs))
    nb = math.sqrt(sum(y * y for y in ys))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / (na * nb)
