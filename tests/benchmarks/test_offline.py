from __future__ import annotations

from collections import Counter

from moscopt.benchmarks import get_benchmark
from moscopt.benchmarks.offline import FAMILIES, generate_items


def test_offline_is_deterministic_and_small() -> None:
    bench = get_benchmark("offline")
    a, b = bench.load(), bench.load()
    assert a.ids() == b.ids()
    assert a.sizes() == {"train": 48, "val": 24, "test": 48}
    assert bench.tools == ["python"]
    for task in a["all"]:
        assert len(task.prompt) < 250 and len(str(task.gold)) < 60
        assert task.meta["family"] in FAMILIES
        assert task.id.startswith(f"offline-{task.meta['family']}-")


def test_offline_covers_every_family_in_each_split() -> None:
    splits = get_benchmark("offline").load()
    for name in ("train", "val", "test"):
        families = Counter(t.meta["family"] for t in splits[name])
        assert set(families) == set(FAMILIES), (name, families)


def test_more_items_extend_never_reshuffle() -> None:
    small = generate_items(20, 42)
    large = generate_items(60, 42)
    assert large[:20] == small
    assert generate_items(20, 7) != small


def test_offline_answers_are_right() -> None:
    import datetime as dt

    for item in generate_items(200, 42):
        q, a = item.question, item.answer
        if item.family == "arithmetic":
            expr = q.removeprefix("Compute ").rstrip(".")
            assert str(eval(expr)) == a  # the expression only holds digits and + - * ( )
        elif item.family == "counting":
            letter, word = q.split('"')[1], q.split('"')[3]
            assert str(word.count(letter)) == a
        elif item.family == "dates" and q.startswith("How many days"):
            parts = q.rstrip("?").split()
            start, end = dt.date.fromisoformat(parts[-3]), dt.date.fromisoformat(parts[-1])
            assert str((end - start).days) == a
        elif item.family == "reversal" and q.startswith("Reverse"):
            words = q.split(": ", 1)[1].split()
            assert a.split() == words[::-1]


def test_split_size_override_generates_enough() -> None:
    splits = get_benchmark("offline").load(sizes={"train": 100, "val": 10, "test": 10}, limit=50)
    assert splits.sizes() == {"train": 50, "val": 10, "test": 10}
