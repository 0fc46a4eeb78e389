from __future__ import annotations

import pytest

from moscopt.benchmarks.splits import split_tasks
from moscopt.benchmarks.tasks import Grade, Task
from moscopt.errors import UserError


def _tasks(n: int) -> list[Task]:
    return [Task(f"t-{i:03d}", "demo", f"q{i}", str(i)) for i in range(n)]


def test_split_sizes_and_disjointness() -> None:
    splits = split_tasks(_tasks(100), {"train": 50, "val": 10, "test": 30}, 42, source="x")
    assert splits.sizes() == {"train": 50, "val": 10, "test": 30}
    ids = splits.ids()
    assert len(set(ids["train"]) | set(ids["val"]) | set(ids["test"])) == 90
    assert len(splits["all"]) == 90


def test_split_does_not_depend_on_input_order() -> None:
    tasks = _tasks(60)
    a = split_tasks(tasks, {"train": 20, "val": 10, "test": 20}, 7, source="x")
    b = split_tasks(list(reversed(tasks)), {"train": 20, "val": 10, "test": 20}, 7, source="x")
    assert a.ids() == b.ids()
    c = split_tasks(tasks, {"train": 20, "val": 10, "test": 20}, 8, source="x")
    assert c.ids() != a.ids()


def test_test_split_is_stable_when_train_size_changes() -> None:
    a = split_tasks(_tasks(80), {"train": 10, "val": 5, "test": 20}, 42, source="x")
    b = split_tasks(_tasks(80), {"train": 40, "val": 5, "test": 20}, 42, source="x")
    assert a.ids()["test"] == b.ids()["test"]


def test_small_data_scales_sizes_down_with_a_note() -> None:
    splits = split_tasks(_tasks(17), {"train": 100, "val": 20, "test": 50}, 42, source="x")
    assert sum(splits.sizes().values()) == 17
    assert all(size > 0 for size in splits.sizes().values())
    assert "scaled down" in splits.note


def test_limit_takes_the_first_n_of_each_split() -> None:
    full = split_tasks(_tasks(50), {"train": 20, "val": 10, "test": 20}, 1, source="x")
    limited = split_tasks(_tasks(50), {"train": 20, "val": 10, "test": 20}, 1, source="x", limit=3)
    for name in ("train", "val", "test"):
        assert limited.ids()[name] == full.ids()[name][:3]


def test_empty_split_is_a_user_error() -> None:
    with pytest.raises(UserError, match="split is empty"):
        split_tasks(_tasks(2), {"train": 5, "val": 5, "test": 5}, 42, source="data.jsonl")
    with pytest.raises(UserError, match="no tasks"):
        split_tasks([], {"train": 1}, 42, source="data.jsonl")


def test_duplicate_ids_are_a_user_error() -> None:
    tasks = [*_tasks(5), Task("t-001", "demo", "again", "1")]
    with pytest.raises(UserError, match="duplicate task id 't-001'"):
        split_tasks(tasks, {"train": 2, "val": 1, "test": 1}, 42, source="x")


def test_grade_reward_is_clamped_and_errors_score_zero() -> None:
    assert Grade(1.7, "x").reward == 1.0
    assert Grade(-2, "x").reward == 0.0
    assert Grade(float("nan"), None).reward == 0.0
    assert Grade(1.0, "x", error="boom").reward == 0.0
    failed = Grade.failed("bad")
    assert failed.reward == 0.0 and failed.error == "bad"
