from __future__ import annotations

import random

import pytest

from moscopt.benchmarks import BenchmarkSpec, Task
from moscopt.embedding.hashing import HashingEmbedder
from moscopt.extensions.niches.assign import NicheAssigner, kmeans, niche_key
from moscopt.extensions.niches.records import NicheState

SPEC = {
    "name": "mini-math",
    "description": "d",
    "source": {
        "local": {
            "files": ["x.jsonl"],
            "fields": {
                "question": "q",
                "answer": "a",
                "meta": {"subject": "subject"},
                "niche": "subject",
            },
        }
    },
    "grader": "exact",
}


def task(i: int, prompt: str, **meta: object) -> Task:
    return Task(f"t{i}", "b", prompt, "1", dict(meta))


def test_the_niche_comes_from_the_spec_field() -> None:
    spec = BenchmarkSpec.model_validate(SPEC)
    key = niche_key(spec)
    assert key == "subject"
    state = NicheState()
    assigner = NicheAssigner(key, state, HashingEmbedder(numbers=True), k=3, seed=0)
    assigner.fit([task(0, "x")])  # nothing to fit with a label
    assert state.centroids == [] and state.source == "field:subject"
    assert assigner.niche(task(1, "x", subject="Geometry")) == "Geometry"
    assert assigner.niche(task(2, "x")) == "unknown"


def test_a_niche_field_must_name_a_meta_key() -> None:
    bad = {**SPEC}
    bad["source"] = {
        "local": {
            "files": ["x.jsonl"],
            "fields": {"question": "q", "answer": "a", "niche": "subject"},
        }
    }
    with pytest.raises(ValueError, match=r"fields\.niche 'subject'"):
        BenchmarkSpec.model_validate(bad)


def test_the_builtin_specs_name_their_niches() -> None:
    from moscopt.benchmarks import get_benchmark

    keys = {n: niche_key(get_benchmark(n).spec) for n in ("math500", "bbh", "gpqa-diamond")}
    assert keys == {"math500": "subject", "bbh": "task", "gpqa-diamond": "domain"}
    assert niche_key(get_benchmark("aime").spec) == "year"
    assert niche_key(get_benchmark("offline").spec) == "family"  # the generator's family
    assert niche_key(get_benchmark("gsm8k").spec) is None  # clustered


GEOMETRY = ["triangle angle side", "triangle side angle length", "angle of a triangle side"]
DATES = ["calendar date weekday", "weekday date calendar month", "date on a calendar weekday"]


def test_without_a_field_tasks_are_clustered_and_new_tasks_join_the_nearest() -> None:
    tasks = [task(i, t) for i, t in enumerate(GEOMETRY + DATES)]
    state = NicheState()
    assigner = NicheAssigner(None, state, HashingEmbedder(numbers=True), k=2, seed=7)
    assigner.fit(tasks)
    labels = [assigner.niche(t) for t in tasks]
    assert len(set(labels[:3])) == 1 and len(set(labels[3:])) == 1 and labels[0] != labels[3]
    assert state.source == "kmeans:2" and len(state.centroids) == 2
    new = task(99, "the weekday of this calendar date")
    assert assigner.niche(new) == labels[3] and state.assigned["t99"] == labels[3]
    # a resumed run (the same state) assigns the same way without refitting
    again = NicheAssigner(
        None,
        NicheState.model_validate_json(state.model_dump_json()),
        HashingEmbedder(numbers=True),
        k=2,
        seed=7,
    )
    again.fit(tasks)
    assert [again.niche(t) for t in tasks] == labels
    assert again.niche(task(100, "the side angle of a triangle")) == labels[0]


def test_kmeans_is_deterministic_and_handles_fewer_points_than_k() -> None:
    points = [[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]]
    a = kmeans(points, 2, random.Random(1))
    b = kmeans(points, 2, random.Random(1))
    assert a == b
    _, labels = a
    assert labels[0] == labels[1] != labels[2] == labels[3]
    centroids, labels = kmeans([[1.0, 1.0], [1.0, 1.0]], 5, random.Random(0))
    assert len(centroids) == 1 and labels == [0, 0]
