"""The embedding module: names, hashing, one model per process, its process, the vector store."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from moscopt.embedding import EmbedderUnavailable, cosine, make_embedder, preload, shared
from moscopt.embedding.hashing import HashingEmbedder
from moscopt.embedding.store import FOLDER, VectorStore
from moscopt.embedding.worker import SentenceEmbedder
from moscopt.optimizer import similarity
from moscopt.testing.fake_embedder import hashing_loader, missing_loader


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    shared.close_all()
    yield
    shared.close_all()


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
    # the bytes are fixed across versions: exported routers read them (`hashing-<dim>`)
    digest = hashlib.sha256(e.encode("Add 12 and 30, then check.").tobytes()).hexdigest()
    assert digest[:16] == "e4592e54bcdb8288"


def test_names_give_hashing_or_the_one_shared_model_which_loads_nothing_yet() -> None:
    assert make_embedder("hashing").name == "hashing-256"
    assert make_embedder("hashing-32").name == "hashing-32"
    assert make_embedder("difflib").name == "hashing-256"  # vectors wanted, no model
    model = make_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert isinstance(model, SentenceEmbedder) and not model.started
    assert make_embedder("sentence-transformers/all-MiniLM-L6-v2") is model  # one per process
    assert make_embedder("other/model") is not model


def test_cosine_reads_lists_and_arrays() -> None:
    v = HashingEmbedder(32).encode("a b c")
    assert cosine(v, v.tolist()) == pytest.approx(1.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0


def test_the_model_runs_in_its_own_process_and_gives_the_loaders_vectors() -> None:
    embedder = SentenceEmbedder("fake/model", loader=hashing_loader)
    embedder.start()
    texts = ["Convert 3 km to m", "Spell forest backwards", "Convert 3 km to m"]
    got = embedder.encode_many(texts)
    want = HashingEmbedder(32).encode_many(texts)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert embedder.computed == 2  # a text repeated in a batch is encoded once
    assert embedder.encode_many([]) == []
    embedder.close()
    assert np.array_equal(embedder.encode("x"), HashingEmbedder(32).encode("x"))  # restarts
    embedder.close()


def test_a_model_that_cannot_load_raises_and_the_diversity_check_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = SentenceEmbedder("some/model", loader=missing_loader)
    with pytest.raises(EmbedderUnavailable, match="no model here"):
        broken.encode("x")
    with pytest.raises(EmbedderUnavailable, match="no model here"):  # remembered, not retried
        broken.encode("y")
    broken.close()
    monkeypatch.setattr(shared, "_models", {"some/model": broken})
    similarity._warn_fallback.cache_clear()
    with caplog.at_level(logging.WARNING, logger="moscopt.optimizer.similarity"):
        for _ in range(2):
            _, method = similarity.mean_pairwise_similarity(["a b c", "a b d"], "some/model")
            assert method == "difflib"
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "some/model: no model here (some/model)" in warned[0]
    assert "0.85 -> 0.412" in warned[0]
    similarity._warn_fallback.cache_clear()
    # without sentence-transformers nothing starts, and the check says why
    monkeypatch.setattr(shared, "installed", lambda: False)
    monkeypatch.setattr(similarity, "installed", lambda: False)
    assert preload(["some/model"]) == []
    assert similarity.mean_pairwise_similarity(["a", "b"], "other/model")[1] == "difflib"
    similarity._warn_fallback.cache_clear()


def test_hashing_and_difflib_names_never_start_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    assert preload(["hashing", "hashing-64", "difflib"]) == []
    assert shared._models == {}
    assert similarity.mean_pairwise_similarity(["a b", "a c"], "hashing")[1] == "difflib"


def test_the_store_keeps_vectors_so_a_rerun_never_starts_the_model(tmp_path: Path) -> None:
    texts = ["Convert 3 km to m", "Spell forest backwards"]
    first = SentenceEmbedder("fake/model", loader=hashing_loader, store=VectorStore(tmp_path))
    a = first.encode_many(texts)
    assert first.computed == 2 and first.started
    first.close()
    again = SentenceEmbedder("fake/model", loader=hashing_loader, store=VectorStore(tmp_path))
    b = again.encode_many([texts[1], texts[0]])
    assert again.computed == 0 and not again.started  # all read back: no process
    assert np.array_equal(a[0], b[1]) and np.array_equal(a[1], b[0])
    c = again.encode_many([*texts, "a new text"])
    assert again.computed == 1 and np.array_equal(c[0], a[0])
    again.close()
    other = SentenceEmbedder("other/model", loader=hashing_loader, store=VectorStore(tmp_path))
    other.encode(texts[0])
    assert other.computed == 1  # keyed by model too
    other.close()


def test_a_damaged_store_entry_is_a_miss(tmp_path: Path) -> None:
    import diskcache

    store = VectorStore(tmp_path)
    vector = HashingEmbedder(32).encode("x")
    store.put_many("m", ["x", "y"], [vector, vector])
    with diskcache.Cache(str(tmp_path)) as raw:
        raw.set(VectorStore.key("m", "y"), b"\x00\x01\x02")  # not a float32 vector
    got = store.get_many("m", ["x", "y", "z"])
    assert got[0] is not None and np.array_equal(got[0], vector)
    assert got[1] is None and got[2] is None
    store.close()


def test_preload_starts_the_shared_model_with_the_projects_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared, "installed", lambda: True)
    model = shared.sentence_embedder("fake/model")
    model.loader = hashing_loader
    assert preload(["fake/model", "hashing", "fake/model"], tmp_path) == ["fake/model"]
    assert model.started and model.store is not None
    assert model.store.directory == tmp_path / FOLDER
    assert similarity.mean_pairwise_similarity(["a b", "a b"], "fake/model") == (
        pytest.approx(1.0),
        "fake/model",
    )
    assert (tmp_path / FOLDER).is_dir()
