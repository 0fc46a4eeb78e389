"""Rule checks, rubric scoring and their readable rendering (moscopt.benchmarks.judges)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from moscopt.benchmarks.judges import Check, Judge, RubricJudge, RuleJudge

JUDGE: TypeAdapter[object] = TypeAdapter(Judge)


@pytest.mark.parametrize(
    ("check", "reply", "met"),
    [
        ({"op": "contains", "arg": "## Key Risks"}, "x\n## Key Risks\n", True),
        ({"op": "contains", "arg": "risks"}, "RISKS", False),
        ({"op": "contains", "arg": "risks", "ignore_case": True}, "RISKS", True),
        ({"op": "not_contains", "arg": "print("}, "log.info(x)", True),
        ({"op": "not_contains", "arg": "print("}, "print(x)", False),
        ({"op": "regex", "arg": r"[Cc]onfidence\s*[:=]"}, "Confidence = high", True),
        ({"op": "regex", "arg": r"^Ticket: ACME-\d+$"}, "Ticket: ACME-12", True),
        ({"op": "section_present", "arg": "Key Risks"}, "## Key risks ##\n", True),
        ({"op": "section_present", "arg": "## Key Risks"}, "# Key Risks", True),
        ({"op": "section_present", "arg": "Key Risks"}, "Key Risks: none", False),
        ({"op": "section_present", "arg": "Key Risks"}, "    ## Key Risks", False),
        ({"op": "max_chars", "arg": 5}, "12345", True),
        ({"op": "max_chars", "arg": 5}, "123456", False),
        ({"op": "min_chars", "arg": 3}, "ab", False),
        ({"op": "max_words", "arg": 2}, "one two three", False),
        ({"op": "min_words", "arg": 2}, "one two", True),
        ({"op": "json_valid"}, '{"a": 1}', True),
        ({"op": "json_valid"}, '```json\n{"a": [1]}\n```', True),
        ({"op": "json_valid"}, "{a: 1}", False),
        ({"op": "json_valid"}, "[" * 100_000, False),
        ({"op": "equals", "arg": "yes"}, "  yes\n", True),
        ({"op": "equals", "arg": "yes"}, "yes!", False),
    ],
)
def test_each_check(check: dict[str, object], reply: str, met: bool) -> None:
    assert Check.model_validate(check).met(reply) is met


@pytest.mark.parametrize(
    ("check", "rendered"),
    [
        ({"op": "contains", "arg": "Confidence:"}, 'must contain "Confidence:"'),
        ({"op": "regex", "arg": r"[Cc]onfidence\s*[:=]"}, r"must match /[Cc]onfidence\s*[:=]/"),
        ({"op": "max_chars", "arg": 1200}, "at most 1200 characters"),
        ({"op": "section_present", "arg": "Risks"}, 'must have a Markdown heading "Risks"'),
        ({"op": "json_valid", "description": "Reply in JSON."}, "Reply in JSON."),
    ],
)
def test_a_check_renders_as_what_it_requires(check: dict[str, object], rendered: str) -> None:
    assert Check.model_validate(check).render() == rendered


@pytest.mark.parametrize(
    ("judge", "field"),
    [
        ({"kind": "rule", "checks": []}, "rule.checks"),
        ({"kind": "rule", "checks": [{"op": "contains"}]}, "rule.checks.0"),
        ({"kind": "rule", "checks": [{"op": "max_chars", "arg": "5"}]}, "rule.checks.0"),
        ({"kind": "rule", "checks": [{"op": "regex", "arg": "("}]}, "rule.checks.0"),
        ({"kind": "rule", "checks": [{"op": "json_valid", "arg": 1}]}, "rule.checks.0"),
        ({"kind": "rule", "checks": [{"op": "shouts", "arg": "x"}]}, "rule.checks.0.op"),
        ({"kind": "rubric", "criteria": []}, "rubric.criteria"),
        ({"kind": "rubric", "criteria": [{"criterion": "x", "weight": 0}]}, "rubric.criteria"),
        ({"kind": "vibes"}, ""),
    ],
)
def test_invalid_judges_are_refused(judge: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        JUDGE.validate_python(judge)
    locs = [".".join(str(p) for p in err["loc"]) for err in e.value.errors()]
    assert any(loc.startswith(field) for loc in locs), locs


def test_rule_rewards_are_graded_and_say_what_failed() -> None:
    judge = RuleJudge.model_validate(
        {
            "kind": "rule",
            "checks": [
                {"op": "contains", "arg": "Confidence:"},
                {"op": "max_chars", "arg": 16},
                {"op": "regex", "arg": "risk", "description": "Mentions a risk."},
            ],
        }
    )
    grade = judge.grade("risk only")
    assert grade.reward == pytest.approx(2 / 3)
    assert grade.detail == '2 of 3 checks met; not met: must contain "Confidence:"'
    strict = judge.model_copy(update={"scoring": "all"})
    assert strict.grade("risk only").reward == 0.0
    assert strict.grade("Confidence:risk").reward == 1.0
    assert str(judge).startswith('must contain "Confidence:"; at most 16 characters')


def test_rubric_weights() -> None:
    judge = RubricJudge.model_validate(
        {"kind": "rubric", "criteria": ["a", {"criterion": "b", "weight": 3}]}
    )
    assert judge.score([True, False]).reward == pytest.approx(0.25)
    assert judge.score([False, True]).reward == pytest.approx(0.75)
    assert "not met: a" in judge.score([False, True]).detail


_ops = st.sampled_from(["contains", "not_contains", "regex", "section_present", "equals"])


@settings(max_examples=200, deadline=None)
@given(op=_ops, arg=st.text(min_size=1, max_size=20), reply=st.text(max_size=200))
def test_a_check_never_raises_on_any_reply(op: str, arg: str, reply: str) -> None:
    try:
        check = Check(op=op, arg=arg)  # type: ignore[arg-type]
    except ValidationError:
        return  # an argument the op refuses (an invalid regex, a blank heading)
    assert isinstance(check.met(reply), bool)
    assert isinstance(check.render(), str)
    json.dumps(check.model_dump())


def test_a_backtracking_pattern_is_a_grader_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`(a|aa)+$` on 60 a's and a b backtracks through the Fibonacci(60) ways to split them (in
    `re` and in `regex`): the search stops at the timeout and the task's grade is a grader error
    that names the check."""
    from moscopt.benchmarks import judges
    from moscopt.benchmarks.taskfile import TaskFileBenchmark, task_file_spec

    monkeypatch.setattr(judges, "REGEX_SECONDS", 0.05)
    judge = {"kind": "rule", "checks": [{"op": "regex", "arg": "(a|aa)+$"}]}
    rows = [{"task_id": f"t{i}", "task": "Write a's.", "judge": judge} for i in range(3)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = TaskFileBenchmark(task_file_spec(path, None))
    task = bench.tasks()[0]
    assert bench.grade(task, "aaa").reward == 1.0  # a reply it matches at once
    grade = bench.grade(task, "a" * 60 + "b")
    assert grade.reward == 0.0 and grade.error is not None
    assert "must match /(a|aa)+$/ took over 0.05 s on this reply" in grade.error
