"""Task files: reading them (one clear error naming file, line and field), splitting them, and
finding them by path (moscopt.benchmarks.taskfile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moscopt.benchmarks import get_benchmark
from moscopt.benchmarks.judges import RuleJudge
from moscopt.benchmarks.taskfile import TaskFileBenchmark, read_task_file, task_file_spec
from moscopt.errors import UserError
from moscopt.testing.judged_world import rule_judge, task_rows

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]}
R = json.dumps(RULE)


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_task_row_becomes_a_task(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "t.jsonl",
        [{"task_id": "a", "task": "Do it.", "context": "ctx", "niche": "n", "owner": "me",
          "judge": RULE}],
    )  # fmt: skip
    (row,) = read_task_file(path)
    task = row.to_task("t")
    assert task.prompt == "Do it.\n\n## Context\n\nctx"
    assert isinstance(task.gold, RuleJudge)
    assert task.meta == {"owner": "me", "niche": "n"}


@pytest.mark.parametrize(
    ("line2", "where"),
    [
        ('{"task_id": "b", "task": "t"}', "t.jsonl:2: field 'judge': required but missing"),
        (
            f'{{"task_id": "b bad", "task": "t", "judge": {R}}}',
            ":2: field 'task_id'",
        ),
        (f'{{"task_id": "a", "task": "t", "judge": {R}}}', "duplicate task_id 'a'"),
        ("{not json", "t.jsonl:2: not valid JSON"),
        ('["a"]', "t.jsonl:2: a task must be an object"),
        (
            '{"task_id": "b", "task": "t", "judge": {"kind": "rule", "checks": '
            '[{"op": "max_chars", "arg": "9"}]}}',
            "t.jsonl:2: field 'judge.rule.checks.0': 'max_chars' needs a whole number",
        ),
    ],
)
def test_a_bad_row_names_file_line_and_field(tmp_path: Path, line2: str, where: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"task_id": "a", "task": "t", "judge": RULE}) + "\n" + line2 + "\n")
    with pytest.raises(UserError) as e:
        read_task_file(path)
    assert where in str(e.value)


def test_yaml_task_files(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "tasks:\n  - task_id: a\n    task: Write it.\n    judge:\n      kind: rubric\n"
        "      criteria: [Is short]\n  - task_id: b\n    task: x\n"
    )
    with pytest.raises(UserError, match=r"t\.yaml: field 'tasks\.1\.judge': required"):
        read_task_file(path)
    assert get_benchmark(str(path)).name == "t"


def test_splits_two_to_one_and_held_out_is_test(tmp_path: Path) -> None:
    train = _jsonl(tmp_path / "train.jsonl", task_rows(12, "t", rule_judge()))
    held = _jsonl(tmp_path / "held.jsonl", task_rows(5, "h", rule_judge()))
    bench = TaskFileBenchmark(task_file_spec(train, held))
    splits = bench.load()
    assert splits.sizes() == {"train": 8, "val": 4, "test": 5}
    assert {t.id for t in splits.test} == {f"h-{i}" for i in range(5)}
    again = TaskFileBenchmark(task_file_spec(train, held)).load()
    assert splits.ids() == again.ids()  # seeded: the same every time
    reordered = _jsonl(tmp_path / "r.jsonl", list(reversed(task_rows(12, "t", rule_judge()))))
    assert TaskFileBenchmark(task_file_spec(reordered, held)).load().ids() == splits.ids()


def test_the_files_are_read_once_while_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moscopt.benchmarks import taskfile

    reads: list[Path] = []
    real = taskfile.read_task_file
    monkeypatch.setattr(taskfile, "read_task_file", lambda p: reads.append(p) or real(p))
    train = _jsonl(tmp_path / "train.jsonl", task_rows(12, "t", rule_judge()))
    bench = TaskFileBenchmark(task_file_spec(train, None))
    splits = bench.load()
    assert not bench.needs_judge_model() and len(reads) == 1  # the tasks, then the judge check
    _jsonl(train, task_rows(13, "t", rule_judge()))  # changed: read again
    assert len(bench.tasks()) == 13 and len(reads) == 2
    assert bench.load().ids() != splits.ids() and len(reads) == 2


def test_rows_may_place_themselves(tmp_path: Path) -> None:
    rows = task_rows(6, "t", rule_judge())
    rows[0]["split"] = "test"
    rows[1]["split"] = "val"
    bench = TaskFileBenchmark(task_file_spec(_jsonl(tmp_path / "t.jsonl", rows)))
    splits = bench.load()
    assert [t.id for t in splits.test] == ["t-0"] and [t.id for t in splits.val] == ["t-1"]
    assert len(splits.train) == 4


def test_the_same_id_in_both_files_is_refused(tmp_path: Path) -> None:
    train = _jsonl(tmp_path / "a.jsonl", task_rows(3, "t", rule_judge()))
    held = _jsonl(tmp_path / "b.jsonl", task_rows(1, "t", rule_judge()))
    with pytest.raises(UserError, match="in both task files"):
        TaskFileBenchmark(task_file_spec(train, held)).load()


def test_a_spec_may_point_at_task_files(tmp_path: Path) -> None:
    _jsonl(tmp_path / "train.jsonl", task_rows(6, "t", rule_judge()))
    _jsonl(tmp_path / "held.jsonl", task_rows(2, "h", rule_judge()))
    spec = tmp_path / "briefs.yaml"
    spec.write_text(
        "name: briefs\ndescription: d\nsource:\n"
        "  tasks: {file: train.jsonl, held_out: held.jsonl}\n"
    )
    bench = get_benchmark(str(spec))
    assert isinstance(bench, TaskFileBenchmark)
    assert bench.load().sizes() == {"train": 4, "val": 2, "test": 2}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndescription: d\nsource: {tasks: {file: x.jsonl}}\ngrader: exact\n")
    with pytest.raises(UserError, match=r"grader: judge goes with source\.tasks"):
        get_benchmark(str(bad))


def test_rule_grading_through_the_benchmark(tmp_path: Path) -> None:
    train = _jsonl(tmp_path / "t.jsonl", task_rows(3, "t", rule_judge()))
    bench = get_benchmark(str(train))
    task = bench.load_every()[0]
    grade = bench.grade(task, "Hi\n## Next steps\nCall us.")
    assert grade.reward == 0.5
    assert 'not met: must contain "-- The Acme Team"' in grade.detail


def test_answer_keys(tmp_path: Path) -> None:
    rows = [{"task_id": "a", "task": "2+2?", "judge": {"kind": "answer", "answer": 4,
             "grader": "numeric"}}]  # fmt: skip
    bench = get_benchmark(str(_jsonl(tmp_path / "t.jsonl", rows)))
    task = bench.load_every()[0]
    assert bench.grade(task, "It is 4.0").reward == 1.0
    assert bench.grade(task, "FINAL ANSWER: 5").reward == 0.0
