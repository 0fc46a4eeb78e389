"""A library user's silent failures made loud (issue 28 item 10): tasks without an answer, an LM
function that ignores `purpose=`, an exception inside the LM function; and the error types a
script catches (item 9)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import moscopt
from moscopt.testing.scripted import gold_of
from tests.api.test_api import CONFIG, ROWS, grade, pool, world


def test_tasks_without_an_answer_are_a_user_error_naming_the_row() -> None:
    rows = [{"question": "What is 2 + 2?", "answer": "4"}, {"question": "What is 3 + 3?"}]
    with pytest.raises(moscopt.UserError) as caught:
        moscopt.evaluate(rows, grader="numeric", lm=lambda messages: "FINAL ANSWER: 4")
    message = str(caught.value)
    assert "tasks.all[1]" in message and "'answer'" in message and "grader function" in message
    assert "\n" not in message
    # a grader function reads the row itself: no answer needed
    report = moscopt.evaluate(
        [{"question": f"Say {i}."} for i in range(3)],
        grader=lambda row, response: True,
        lm=lambda messages: "FINAL ANSWER: 4",
    )
    assert report.score == 1.0


def test_an_lm_function_that_ignores_purpose_gets_a_warning_that_says_what_to_do(
    tmp_path: Path, seed_dir: Path
) -> None:
    def same_answer_for_everything(messages: list[dict[str, str]]) -> str:
        return f"FINAL ANSWER: {gold_of(messages[-1]['content'])}"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = moscopt.train(
            ROWS,
            grader=grade,
            skills=pool(seed_dir),
            config=CONFIG,
            lm=same_answer_for_everything,
            run_dir=tmp_path / "run",
        )
    assert result.status == "done" and result.accepted == 0
    mine = [w for w in caught if issubclass(w.category, moscopt.FunctionLMWarning)]
    assert len(mine) == 1  # once, not once per proposal
    text = str(mine[0].message)
    assert "same_answer_for_everything" in text and "call for 'propose-" in text
    assert "purpose" in text and "schema" in text and "keyword" in text


def test_an_exception_in_the_lm_function_is_one_moscopt_error_with_the_original_as_cause(
    tmp_path: Path, seed_dir: Path
) -> None:
    def broken(messages: list[dict[str, str]], **params: Any) -> str:
        if params.get("purpose") == "agent":
            return "FINAL ANSWER: 0"
        return str(1 / 0)

    with pytest.raises(moscopt.RunFailed) as caught:
        moscopt.train(
            ROWS,
            grader=grade,
            skills=pool(seed_dir),
            config=CONFIG,
            lm=broken,
            run_dir=tmp_path / "run",
        )
    error = caught.value
    assert isinstance(error, moscopt.MoscoptError) and isinstance(
        error, moscopt.api.LMFunctionError
    )
    assert isinstance(error.__cause__, ZeroDivisionError)
    message = str(error)
    assert "broken" in message and "ZeroDivisionError" in message and "division by zero" in message
    assert "call for 'gate'" in message and "\n" not in message
    assert (tmp_path / "run" / "state.json").is_file()  # the run stopped, its state saved


def test_a_non_string_answer_is_the_same_error() -> None:
    with pytest.raises(moscopt.RunFailed, match="returned int, not str, on a call for 'agent'"):
        moscopt.evaluate(ROWS, grader=grade, lm=lambda messages: 42)


def test_the_error_types_are_exported_from_the_package() -> None:
    from moscopt import errors
    from moscopt.lm.errors import LMUnavailableError

    assert moscopt.UserError is errors.UserError and moscopt.RunFailed is errors.RunFailed
    assert issubclass(LMUnavailableError, moscopt.RunFailed)
    assert issubclass(moscopt.RunFailed, moscopt.MoscoptError)
    assert {"MoscoptError", "UserError", "RunFailed", "FunctionLMWarning"} <= set(moscopt.__all__)


def test_two_trainings_in_the_same_second_get_two_run_folders(
    tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default run folder is new even when the clock has not moved (an example or a
    script run again at once used to stop with `already holds a run`)."""
    from moscopt.run import rundir

    monkeypatch.setattr(rundir, "_stamp", lambda: "20261204-120000")
    config = {**CONFIG, "runs_dir": str(tmp_path / "runs"), "training.max_steps_per_epoch": 1}
    runs = [
        moscopt.train(ROWS, grader=grade, skills=pool(seed_dir), config=config, lm=world())
        for _ in range(2)
    ]
    assert [r.run_dir.name for r in runs] == ["tasks-20261204-120000", "tasks-20261204-120000-2"]
    assert all(r.status == "done" for r in runs)
