"""Features of a task for the familiarity router: a frozen sentence embedding of its text.

The embedder is the shared one (`moscopt.embedding.make_embedder`: MiniLM by default, in its own
process, or `hashing-<dim>`). `FeatureCache` computes each text's vector once, in a worker
thread, so an evaluation's event loop never waits on the model. Where the tasks are known
ahead (an evaluation's split, the trainer's tasks) `prefetch` embeds them all in one
`encode_many` call before routing starts, so a routing decision only reads the cache. It embeds
a task without its `boilerplate`, the text every task of the benchmark carries (its answer
instructions): that tells no two tasks apart, and on short tasks it is half of the tokens.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from moscopt.embedding.base import text_key

if TYPE_CHECKING:
    from moscopt.embedding.base import Embedder, Vector


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
