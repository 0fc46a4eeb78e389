"""Issue 41: the diversity check's work is bounded whatever the pool's size (a stable sample of
`SAMPLE` skills for the mean, MinHash sketches to nominate the similar pairs beyond it)."""

from __future__ import annotations

import difflib
import itertools
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from moscopt.optimizer import similarity
from moscopt.optimizer.similarity import (
    CANDIDATES,
    DECISIVE,
    DIFFLIB_PAIRS,
    FIRST,
    SAMPLE,
    mean_pairwise_similarity,
    pair_cosines,
    sample_indices,
    similar_pairs,
)
from moscopt.optimizer.sketches import estimated_jaccard, ranked_pairs

WORDS = [f"w{i}" for i in range(400)]
MATCHER = difflib.SequenceMatcher  # the real one (the fixture patches the module)


def texts(n: int, seed: int = 0, shared: float = 0.5) -> list[str]:
    """`n` texts of 120 words: each word from a common text with probability `shared`, else
    drawn at random (so similarity varies from pair to pair)."""
    rng = random.Random(seed)
    base = [rng.choice(WORDS) for _ in range(120)]
    out = []
    for _ in range(n):
        keep = rng.uniform(0.2, 0.9) * shared * 2
        out.append(" ".join(w if rng.random() < keep else rng.choice(WORDS) for w in base))
    return out


class Counting:
    """difflib.SequenceMatcher, counting how many are made."""

    made = 0

    def __init__(self, *a: Any, **kw: Any) -> None:
        Counting.made += 1
        self._m = MATCHER(*a, **kw)

    def ratio(self) -> float:
        return self._m.ratio()


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[Counting]:
    Counting.made = 0
    monkeypatch.setattr(similarity.difflib, "SequenceMatcher", Counting)
    return Counting


def test_difflib_compares_the_pairs_of_a_sample_not_of_the_pool(counting: type[Counting]) -> None:
    pool = texts(200)
    _, method = mean_pairwise_similarity(pool, "difflib", [f"s{i}" for i in range(200)])
    assert method == "difflib"
    assert counting.made == DIFFLIB_PAIRS  # drawn over the pool, not all 19,900
    small = texts(SAMPLE)
    counting.made = 0
    exact = mean_pairwise_similarity(small, "difflib")[0]
    assert counting.made == SAMPLE * (SAMPLE - 1) // 2  # up to SAMPLE: every pair, as before
    pairs = list(itertools.combinations(small, 2))
    brute = sum(MATCHER(None, a, b).ratio() for a, b in pairs) / len(pairs)
    assert exact == pytest.approx(brute, abs=1e-12)


def test_the_sampled_mean_estimates_the_pools_mean() -> None:
    pool = texts(96, seed=3)
    names = [f"skill-{i}" for i in range(96)]
    pairs = list(itertools.combinations(pool, 2))
    exact = sum(difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs) / len(pairs)
    estimate, _ = mean_pairwise_similarity(pool, "difflib", names)
    assert abs(estimate - exact) < 0.03


def test_the_sample_stays_put_while_its_members_do() -> None:
    names = [f"skill-{i}" for i in range(100)]
    chosen = {names[i] for i in sample_indices(names)}
    assert len(chosen) == SAMPLE
    shuffled = random.Random(1).sample(names, len(names))
    assert {shuffled[i] for i in sample_indices(shuffled)} == chosen  # order does not matter
    outsider = next(n for n in names if n not in chosen)
    fewer = [n for n in names if n != outsider] + ["newborn"]
    after = {fewer[i] for i in sample_indices(fewer)}
    assert len(chosen - after) <= 1  # a newborn displaces at most one member
    assert sample_indices(names[:SAMPLE]) == list(range(SAMPLE))


def test_embeddings_are_asked_for_the_sample_only(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def vectors(model: str, got: Sequence[str]) -> list[Any]:
        asked.append(len(got))
        rng = np.random.default_rng(len(got))
        m = rng.normal(size=(len(got), 8)).astype(np.float32)
        return list(m / np.linalg.norm(m, axis=1, keepdims=True))

    monkeypatch.setattr(similarity, "vectors_for", vectors)
    sim, method = mean_pairwise_similarity(texts(300), "some/model", [f"n{i}" for i in range(300)])
    assert asked == [SAMPLE] and method == "some/model" and -1.0 <= sim <= 1.0


def test_half_the_sample_decides_when_its_estimate_is_far_from_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given the threshold, the first FIRST skills of the sample are embedded first; the other
    half only when their estimate is within DECISIVE of it. The same texts always take the same
    path: the answer depends on the texts, never on what was already embedded."""
    asked: list[list[str]] = []

    def vectors(model: str, got: Sequence[str]) -> list[Any]:
        asked.append(list(got))
        rng = np.random.default_rng(7)
        m = rng.normal(size=(len(got), 8)).astype(np.float32) + 3.0  # cosines near 0.9
        return list(m / np.linalg.norm(m, axis=1, keepdims=True))

    monkeypatch.setattr(similarity, "vectors_for", vectors)
    pool, names = texts(300), [f"n{i}" for i in range(300)]
    sim, _ = mean_pairwise_similarity(pool, "some/model", names, threshold=0.3)
    assert [len(a) for a in asked] == [FIRST] and abs(sim - 0.3) >= DECISIVE
    assert asked[0] == [pool[i] for i in sample_indices(names, FIRST)]
    asked.clear()
    mean_pairwise_similarity(pool, "some/model", names, threshold=sim)
    assert [len(a) for a in asked] == [FIRST, SAMPLE]
    assert set(asked[0]) <= set(asked[1])  # the first half is part of the whole sample
    asked.clear()
    mean_pairwise_similarity(pool[:FIRST], "some/model", names[:FIRST], threshold=0.3)
    assert [len(a) for a in asked] == [FIRST]  # no more skills than the first half: every pair


def test_the_cosines_of_every_pair_come_from_one_matrix_product() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(20, 16)).astype(np.float32)
    vectors = list(m / np.linalg.norm(m, axis=1, keepdims=True))
    brute = [float(a @ b) for a, b in itertools.combinations(vectors, 2)]
    assert pair_cosines(vectors) == pytest.approx(brute, abs=1e-6)


def test_sketches_find_the_planted_near_duplicate_among_many(counting: type[Counting]) -> None:
    rng = random.Random(5)
    pool = [" ".join(rng.choice(WORDS) for _ in range(150)) for _ in range(120)]
    twin = pool[17].split()
    twin[40:45] = ["changed"] * 5
    pool[90] = " ".join(twin)
    names = [f"s{i}" for i in range(120)]
    pairs = similar_pairs(names, pool)
    assert pairs[0] == ("s17", "s90")
    assert counting.made <= CANDIDATES  # difflib orders the nominated pairs only
    assert len(pairs) == 120 * 119 // 2 and len(set(pairs)) == len(pairs)


def test_similar_pairs_up_to_the_sample_are_difflibs_order() -> None:
    pool = texts(6, seed=2)
    names = list("abcdef")
    ratios = {
        (names[i], names[j]): difflib.SequenceMatcher(None, pool[i], pool[j]).ratio()
        for i, j in itertools.combinations(range(6), 2)
    }
    got = similar_pairs(names, pool)
    assert [ratios[p] for p in got] == sorted(ratios.values(), reverse=True)


def test_sketches_are_a_pure_function_of_the_texts() -> None:
    pool = texts(10, seed=4)
    sims = estimated_jaccard(pool)
    assert np.allclose(np.diag(sims), 1.0)
    assert np.array_equal(sims, estimated_jaccard(list(pool)))
    assert ranked_pairs(pool) == ranked_pairs(list(pool))
    assert estimated_jaccard(["a b c d e f", "u v w x y z"])[0, 1] < 0.1


def test_an_adopted_pool_warms_the_samples_vectors_where_the_model_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    warmed: list[list[str]] = []

    class Running:
        def warm(self, got: Sequence[str]) -> None:
            warmed.append(list(got))

    names = [f"n{i}" for i in range(100)]
    pool = texts(100)
    monkeypatch.setattr(similarity, "running_embedder", lambda model: None)
    similarity.warm("some/model", names, pool)  # its process is not running: nothing starts
    assert warmed == []
    monkeypatch.setattr(similarity, "running_embedder", lambda model: Running())
    similarity.warm("difflib", names, pool)  # no model
    assert warmed == []
    similarity.warm("some/model", names, pool)
    assert warmed == [[pool[i] for i in sample_indices(names, FIRST)]]  # what is read first
