"""harvest -> train --tasks -> adopt through the command line, against the loopback server: a
user who keeps asking for the same fix ("no — always put the risks first") gets a skill that
does it, certified on held-out requests; corrections that contradict each other stage nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.learn_world import REQUESTS, RULE, responder, write_sessions
from moscopt.testing.scripted import write_project

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


def test_harvest_train_adopt_the_repeated_correction(project: Path) -> None:
    n = write_sessions(project / "sessions.jsonl", ["no — always put the risks first"] * 999)
    assert n == len(REQUESTS)
    mined = runner.invoke(
        app, ["harvest", "--source", "jsonl", "--path", "sessions.jsonl", "-o", "tasks.jsonl"]
    )
    assert mined.exit_code == 0, mined.output
    said = f"recurring correction ({n} sessions): Always put the risks first."
    assert said in mined.output
    held = [json.loads(x) for x in Path("tasks.heldout.jsonl").read_text().splitlines()]
    assert len(held) >= 6  # enough held-out requests for the certificate to decide
    with FakeServer(responder=responder) as server:
        trained = runner.invoke(
            app,
            ["train", "--tasks", "tasks.jsonl", "--held-out", "tasks.heldout.jsonl",
             "--model", "openai/scripted", "--api-base", server.url, "--n", "3", "--k", "2",
             "--epochs", "1", "--steps-per-epoch", "2", "--run", "runs/r1", "--no-evolution",
             "--max-calls", "2000"],
        )  # fmt: skip
        assert trained.exit_code == 0, trained.output
    assert "certificate: BETTER than the seed pool (seed 0.000 -> final 1.000" in trained.output
    adopted = runner.invoke(app, ["adopt", "--run", "runs/r1", "--to", ".claude/skills"])
    assert adopted.exit_code == 0, adopted.output
    assert f"+{RULE}" in adopted.output and "certificate: better" in adopted.output
    text = "".join(p.read_text() for p in Path(".claude/skills").rglob("SKILL.md"))
    assert RULE in text and not Path(".claude/skills/gate").exists()


def test_contradicting_corrections_stage_nothing(project: Path) -> None:
    said = ["No, always include `Owner:` in it.", "No, never include `Owner:` in it."]
    sessions = project / "sessions.jsonl"
    lines = []
    for i, correction in enumerate(said * 4):  # the same request, corrected both ways
        messages = [
            {"role": "user", "content": "Write the weekly report for the platform team"},
            {"role": "assistant", "content": "Report."},
            {"role": "user", "content": correction},
        ]
        lines.append(json.dumps({"id": f"s{i}", "messages": messages}))
    sessions.write_text("\n".join(lines) + "\n")
    learned = runner.invoke(
        app, ["learn", "--source", "jsonl", "--path", str(sessions), "--max-calls", "50"]
    )
    assert learned.exit_code == 0, learned.output
    assert "mined 0 task(s)" in learned.output and "nothing staged" in learned.output
    assert not Path("runs").exists()
