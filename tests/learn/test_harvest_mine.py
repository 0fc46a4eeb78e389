"""The deterministic and the LLM miners, and the task file they write (read back by the task
file parser of `moscopt train --tasks`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.benchmarks.taskfile import read_task_file
from moscopt.cli import app
from moscopt.learn.corrections import requirements
from moscopt.learn.harvest import harvest
from moscopt.learn.mine import mine
from moscopt.learn.mine_llm import MINE_SCHEMA, mine_with_model
from moscopt.learn.sessions import Session
from moscopt.lm.base import LMRequest
from moscopt.testing import FakeLM

runner = CliRunner()
PROJECT = Path("/home/user/project")


def test_the_deterministic_miner_finds_the_repeated_correction_in_real_transcripts(
    sessions_dir: Path,
) -> None:
    sessions = harvest("codex", path=sessions_dir / "codex", project=PROJECT).sessions
    mined = mine(sessions)
    assert ("Always put the risks first.", 2) in mined.recurring
    reports = [t for t in mined.tasks if "status report" in t.task]
    assert len(reports) == 1  # billing and search reports: near-duplicates, merged
    [report] = reports
    assert report.meta["occurrences"] == 2 and len(report.meta["sessions"]) == 2
    assert "Always put the risks first." in report.judge["criteria"]
    [retry] = [t for t in mined.tasks if "retry" in t.task]
    assert retry.judge == {
        "kind": "rule",
        "checks": [
            {"op": "contains", "description": "uses log.warning", "arg": "log.warning"},
            {"op": "not_contains", "description": "does not use print(", "arg": "print("},
        ],
        "scoring": "fraction",
    }


@pytest.mark.parametrize(
    ("said", "judged"),
    [
        ("no — always put the risks first", ["Always put the risks first."]),
        ("use our logger, not print", ["Use our logger, not print."]),
        ("Keep it under 80 words.", [{"op": "max_words", "arg": 80}]),
        ('No. Add a "Next steps" section.', [{"op": "section_present", "arg": "Next steps"}]),
        ("wrong, return valid JSON only", [{"op": "json_valid"}]),
        ("Never mention `TODO`.", [{"op": "not_contains", "arg": "TODO"}]),
        ("you forgot the tests", ["Includes the tests."]),
        ("that's wrong", ['Does not repeat an answer the user rejected: "42".']),
    ],
)
def test_corrections_become_checks_when_literal_and_criteria_otherwise(
    said: str, judged: list[Any]
) -> None:
    got = [
        r.criterion if r.check is None else {k: v for k, v in r.check.items() if k != "description"}
        for r in requirements(said, rejected="42")
    ]
    assert got == judged


def chat(*turns: str, sid: str = "s") -> Session:
    s = Session("jsonl", sid, Path("x"))
    for i, text in enumerate(turns):
        s.add("user" if i % 2 == 0 else "assistant", text, None)
    return s


def test_contradicting_corrections_are_dropped_and_counted() -> None:
    a = chat("Write the changelog", "...", "Always include `BREAKING`.", sid="a")
    b = chat("Write the changelog", "...", "Never mention `BREAKING`.", sid="b")
    mined = mine([a, b])
    assert mined.tasks == [] and mined.contradictory == 1


def test_criteria_said_both_ways_are_dropped_and_counted() -> None:
    """A rubric criterion and its negation (`mine.polarity`) are a contradiction, as a literal
    both required and banned is; criteria about other things stay."""
    a = chat("Draft the weekly update", "...", "no — use bullet points.", sid="a")
    b = chat("Draft the weekly update", "...", "no — don't use bullet points.", sid="b")
    mined = mine([a, b])
    assert mined.tasks == [] and mined.contradictory == 1
    c = chat("Draft the weekly update", "...", "no — put the risks first.", sid="c")
    [task] = mine([a, b, c]).tasks
    assert task.judge["criteria"] == ["Put the risks first."]
    assert task.meta["contradicted"] == 2
    d = chat("Draft the weekly update", "...", "no — never use tables.", sid="d")
    [task] = mine([a, d]).tasks  # not the same thing negated: both kept
    assert task.judge["criteria"] == ["Use bullet points.", "Never use tables."]


def test_a_reask_counts_as_evidence_and_a_request_without_feedback_is_no_task() -> None:
    s = chat(
        "Summarize the design doc for the team",
        "A summary.",
        "Summarize the design doc for the team please",
        "Another.",
        "Now rename the module",
        "Done.",
    )
    assert mine([s]).tasks == []  # a re-ask alone states no requirement
    s.add("user", "no — put the decisions first", None)
    [task] = mine([s]).tasks
    assert task.task == "Now rename the module" and "User: " in task.context


def test_the_task_file_follows_the_format_and_keeps_held_out_tasks_apart(tmp_path: Path) -> None:
    sessions = [
        chat(f"Write release notes for service number {i} {'x' * i}", "ok", "no — be brief")
        for i in range(12)
    ]
    for i, s in enumerate(sessions):
        s.id = f"s{i}"
        s.turns[0] = type(s.turns[0])(
            "user", f"Task {i}: " + " ".join(f"w{i}{j}" for j in range(6))
        )
    path = tmp_path / "session.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"id": s.id, "messages": [{"role": t.role, "content": t.text} for t in s.turns]}
            )
            + "\n"
            for s in sessions
        )
    )
    out = tmp_path / "tasks.jsonl"
    result = runner.invoke(
        app, ["harvest", "--source", "jsonl", "--path", str(path), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    main = read_task_file(out)  # the parser `moscopt train --tasks` uses
    held = read_task_file(out.with_name("tasks.heldout.jsonl"))
    assert {t.split for t in main} == {"train", "val"} and {t.split for t in held} == {"test"}
    assert len(main) + len(held) == 12
    assert all(t.judge.kind == "rubric" for t in main)
    assert main[0].to_task("mined").meta["miner"] == "deterministic"  # metadata kept
    again = tmp_path / "again.jsonl"
    runner.invoke(app, ["harvest", "--source", "jsonl", "--path", str(path), "-o", str(again)])
    assert read_task_file(again.with_name("again.heldout.jsonl")) == held  # stable


def test_the_llm_miner_writes_judges_through_the_lm_seam(sessions_dir: Path) -> None:
    sessions = harvest("codex", path=sessions_dir / "codex", project=PROJECT).sessions
    seen: list[LMRequest] = []

    def mine_route(request: LMRequest) -> str:
        seen.append(request)
        assert request.schema == MINE_SCHEMA
        if "retry" in request.messages[-1]["content"]:
            return json.dumps({"keep": False, "checks": [], "criteria": []})
        return json.dumps(
            {
                "keep": True,
                "checks": [
                    {"op": "section_present", "arg": "Risks", "description": "a Risks section"},
                    {"op": "regex", "arg": "([", "description": "a broken pattern: dropped"},
                    {"op": "max_words", "arg": "many", "description": "not an int: dropped"},
                ],
                "criteria": [],
            }
        )

    lm = FakeLM(routes={"mine": mine_route})
    mined, calls = mine_with_model(sessions, lm)
    assert calls == 2 == len(seen) and set(lm.purposes) == {"mine"}
    [task] = mined.tasks  # the retry exchange: keep false
    assert task.meta["miner"] == "model:fake/model"
    assert task.judge["checks"] == [
        {"op": "section_present", "description": "a Risks section", "arg": "Risks"}
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--source", "slack"], "unknown source"),
        (["--source", "jsonl"], "--source jsonl needs --path"),
        (["--source", "codex", "--since", "yesterday-ish"], "--since"),
        (["--source", "codex", "--path", "/nonexistent/x"], "no such file or folder"),
    ],
)
def test_bad_harvest_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], says: str
) -> None:
    out = tmp_path / "t.jsonl"
    result = runner.invoke(app, ["harvest", *args, "-o", str(out)])
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output
    assert not out.exists()
