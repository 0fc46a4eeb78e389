"""Deep nesting (issue 38, items 7 and 8). A YAML or JSON file nested past the bound (100
levels, `moscopt.core.jsonio.MAX_DEPTH`) is one message naming the file, exit 2, nothing
written; model text nested 25,000 levels deep, for every purpose, is a bad answer handled by
policy. Never a `RecursionError` traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.app.workspace import make_trainer
from moscopt.cli import app
from moscopt.lm.base import LMRequest
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import make_run, respond

from .test_bad_input import (
    COMMANDS,
    Mutation,
    append,
    one_line_error,
    refused_on_bad_project,
    refused_on_damaged_run,
    replace_in,
    stopped_run,
    write,
)

__all__ = ["stopped_run"]  # the fixture, shared with test_bad_input

runner = CliRunner()
DEEP = "nested deeper than 100 levels"
SKILL = "skills/careful-computation/SKILL.md"


def yaml_deep(n: int) -> str:
    return "[" * n + "]" * n


def json_deep(n: int) -> str:
    return '{"a": ' * n + "1" + "}" * n


def skill_with_deep_metadata(root: Path) -> None:
    path = root / SKILL
    text = path.read_text()
    path.write_text(text.replace("---\n", f"---\nmetadata: {{x: {yaml_deep(600)}}}\n", 1))


CASES: dict[str, tuple[Mutation, tuple[str, ...], str]] = {
    "config-2000": (
        write("moscopt.yaml", f"seed: 1\nextra: {yaml_deep(2000)}\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:2: ",
    ),
    "skill-metadata-600": (skill_with_deep_metadata, ("train", "eval", "status"), r"SKILL\.md"),
    "spec-2000": (append("addition.yaml", f"x: {yaml_deep(2000)}\n"), ("train", "eval"), r"yaml"),
    "data-line-25000": (
        append("addition.jsonl", f'{{"id": "a99", "question": {json_deep(25000)}}}\n'),
        ("train", "eval"),
        r"addition\.jsonl:15: ",
    ),
}
PARAMS = [(case, cmd) for case, (_, cmds, _) in sorted(CASES.items()) for cmd in cmds]


def one_error(output: str, where: str) -> str:
    line = one_line_error(output, where)
    assert DEEP in line, line
    assert "Traceback" not in output and "RecursionError" not in output
    return line


@pytest.mark.parametrize(("case", "command"), PARAMS)
def test_a_deep_project_file_is_one_message_naming_it(
    project: Path, case: str, command: str
) -> None:
    mutate, _, where = CASES[case]
    one_error(refused_on_bad_project(project, mutate, command), where)


def test_a_deep_set_value_is_one_message(project: Path) -> None:
    result = runner.invoke(app, [*COMMANDS["eval"], "--set", f"seed={yaml_deep(2000)}"])
    assert result.exit_code == 2, result.output
    one_error(result.output, r"--set")


def deep_checkpoint(root: Path) -> None:
    for path in (root / "checkpoints").glob("*.json"):
        path.write_text(f'{{"skills": {json_deep(25000)}}}')


RUN_CASES: dict[str, tuple[Mutation, tuple[str, ...], str]] = {
    "state-25000": (
        replace_in("state.json", '"step": ', f'"x": {json_deep(25000)}, "step": '),
        ("status", "resume", "eval"),
        r"state\.json",
    ),
    "state-500": (  # past the bound, within what orjson and json each take
        replace_in("state.json", '"step": ', f'"x": {json_deep(500)}, "step": '),
        ("status", "resume", "eval"),
        r"state\.json",
    ),
    "frozen-config-2000": (
        append("moscopt.yaml", f"x: {yaml_deep(2000)}\n"),
        ("status", "resume", "eval"),
        r"moscopt\.yaml",
    ),
    "checkpoint-25000": (deep_checkpoint, ("resume", "eval"), r"checkpoints/.*\.json"),
}
RUN_PARAMS = [(case, cmd) for case, (_, cmds, _) in sorted(RUN_CASES.items()) for cmd in cmds]


@pytest.mark.parametrize(("case", "command"), RUN_PARAMS)
def test_a_deep_run_file_is_one_message_naming_it(
    stopped_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, command: str
) -> None:
    mutate, _, where = RUN_CASES[case]
    one_error(refused_on_damaged_run(stopped_run, tmp_path, monkeypatch, mutate, command), where)


def test_the_json_reader_is_bounded_and_exact() -> None:
    from moscopt.core import jsonio, yamlio

    assert jsonio.loads("[" * 100 + "]" * 100) is not None  # 100 levels: read
    assert yamlio.load("a: " + "[" * 99 + "]" * 99) is not None  # the mapping is level 1
    for text in ("[" * 101 + "]" * 101, json_deep(25000), "[" * 25000):
        with pytest.raises(json.JSONDecodeError, match=DEEP):
            jsonio.loads(text)
    assert jsonio.loads(b'{"a": NaN, "b": 123456789012345678901234567890}')["b"] > 2**64


# -- item 8: model text nested 25,000 deep, for every purpose -----------------------------------

NESTED = json_deep(25000)
PURPOSES = ("propose", "evolve", "gate", "reflect", "agent")


def answering(purpose: str, seen: list[str]) -> Callable[[LMRequest], str]:
    def answer(request: LMRequest) -> str:
        seen.append(purpose)
        return NESTED

    return answer


@pytest.mark.parametrize("purpose", PURPOSES)
def test_a_nested_answer_to_any_purpose_never_crashes_training(
    tmp_path: Path, seed_dir: Path, purpose: str
) -> None:
    overrides: dict[str, Any] = {
        "training.epochs": 1,
        "evolution.enabled": True,
        "credit.c_min": 1,
    }
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **overrides)
    seen: list[str] = []
    routes = {purpose: answering(purpose, seen)}
    trainer = make_trainer(
        run=RunDir.open(run.path),
        config=config,
        benchmark=bench,
        splits=sp,
        agent_lm=FakeLM(responder=respond, routes=routes),
        optimizer_lm=FakeLM(responder=respond, routes=routes),
        seeds=seeds,
    )
    state = asyncio.run(trainer.train())
    assert seen, f"no {purpose} call was made"
    assert state.status == "done"


def test_the_parsers_of_distill_and_codream_refuse_nested_text() -> None:
    from moscopt.core.edits import ProposalError, parse_proposal
    from moscopt.exports.distill import parse_distilled
    from moscopt.extensions.niches.codream import parse_insights
    from moscopt.lm.structured import OutputInvalid, parse_structured
    from moscopt.optimizer.evolve import parse_draft
    from moscopt.routing.gate import GateParseError, parse_activation

    for text in (NESTED, "prose " + '{"edits": ' * 25000):
        with pytest.raises(ProposalError):
            parse_proposal(text)
    for parse in (lambda t: parse_distilled(t, ["a"]), parse_draft, lambda t: parse_insights(t, 3)):
        with pytest.raises(ValueError, match=DEEP):
            parse(NESTED)
    with pytest.raises(OutputInvalid, match=DEEP):
        parse_structured(NESTED, {"type": "object"})
    with pytest.raises(GateParseError):
        parse_activation(NESTED, ["a", "b"], 1)
