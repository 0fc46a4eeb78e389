"""Features of the familiarity router: the per-text cache, the projection, arrays."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.routing.arrays import ArrayFormatError, decode_array, encode_array
from moscopt.routing.features import FeatureCache
from moscopt.routing.projection import Projection


class CountingEmbedder:
    """Records the thread of every encode."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = HashingEmbedder(32)
        self.threads: list[str] = []
        self.batches: list[int] = []

    def encode(self, text: str) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        return self.inner.encode(text)

    def encode_many(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.batches.append(len(texts))
        return [self.encode(t) for t in texts]


def test_the_cache_encodes_each_text_once_and_off_the_event_loop() -> None:
    embedder = CountingEmbedder()
    cache = FeatureCache(embedder)

    async def main() -> list[np.ndarray]:
        a = await cache.vectors(["x", "y", "x"])
        b = await asyncio.gather(*(cache.vectors(["y", "z"]) for _ in range(4)))
        return [*a, *(v for pair in b for v in pair)]

    out = asyncio.run(main())
    assert cache.computed == 3 and len(embedder.threads) == 3
    assert threading.main_thread().name not in embedder.threads
    assert np.array_equal(out[0], out[2]) and not out[0].flags.writeable


def test_prefetch_embeds_the_known_tasks_in_one_batch_then_routing_reads_the_cache() -> None:
    embedder = CountingEmbedder()
    cache = FeatureCache(embedder)
    tasks = [f"Convert {i} km to m" for i in range(20)]

    async def main() -> list[np.ndarray]:
        await cache.prefetch([*tasks, tasks[0]])
        await cache.prefetch(tasks)  # all cached: no second batch
        return await cache.vectors(tasks[:5])

    out = asyncio.run(main())
    assert embedder.batches == [20] and cache.computed == 20
    assert threading.main_thread().name not in embedder.threads
    assert all(
        np.array_equal(v, embedder.inner.encode(t)) for v, t in zip(out, tasks[:5], strict=True)
    )


def test_projection_fit_is_deterministic_and_keeps_the_top_directions() -> None:
    rng = np.random.default_rng(0)
    # two clusters in 32 dimensions: the first principal direction separates them
    a = rng.normal(size=(20, 32)) * 0.1 + np.eye(32)[0]
    b = rng.normal(size=(20, 32)) * 0.1 - np.eye(32)[0]
    vectors = [v.astype(np.float32) for v in np.vstack([a, b])]
    p, q = Projection.fit(vectors, 4), Projection.fit(vectors, 4)
    assert p.dim == 4 and p.embedding_dim == 32
    assert np.array_equal(p.basis, q.basis) and np.array_equal(p.center, q.center)
    assert abs(float(p.basis[0, 0])) > 0.99 and p.basis[0, 0] > 0  # sign fixed
    z = p.apply(vectors[0])
    assert z.shape == (4,) and float(np.linalg.norm(z)) == pytest.approx(1.0, abs=1e-5)
    assert Projection.fit(vectors[:1], 4).dim == 32  # one vector: the identity
    again = Projection.from_json(p.to_json())
    assert np.array_equal(again.basis, p.basis)
    with pytest.raises(ValueError, match="32-dimensional"):
        p.apply(np.zeros(8, np.float32))


def test_arrays_round_trip_exactly_and_bad_documents_are_named() -> None:
    x = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    doc = encode_array(x)
    assert set(doc) == {"dtype", "shape", "base64"} and doc["shape"] == [3, 5]
    assert np.array_equal(decode_array(doc), x) and decode_array(doc).dtype == np.float32
    with pytest.raises(ArrayFormatError, match="bytes"):
        decode_array({**doc, "shape": [4, 5]})
    with pytest.raises(ArrayFormatError, match="dtype"):
        decode_array({**doc, "dtype": "int8"})
    with pytest.raises(ArrayFormatError):
        decode_array({"shape": [1]})


def test_the_cache_embeds_a_task_without_the_benchmarks_boilerplate() -> None:
    instructions = "End your reply with a line of the form: FINAL ANSWER: <answer>"
    embedder = CountingEmbedder()
    cache = FeatureCache(embedder, [instructions, "  "])
    assert cache.boilerplate == (instructions,)  # blank strings strip nothing
    task = f"Convert 4 yards to inches.\n\n{instructions}"
    assert cache.feature_text(task) == "Convert 4 yards to inches."
    asyncio.run(cache.prefetch([task, "Convert 4 yards to inches."]))
    assert embedder.batches == [1] and cache.computed == 1  # one text, embedded once
    assert np.array_equal(cache.vector(task), embedder.inner.encode("Convert 4 yards to inches."))
    plain = FeatureCache(CountingEmbedder())
    assert plain.feature_text(task) == task.strip()
