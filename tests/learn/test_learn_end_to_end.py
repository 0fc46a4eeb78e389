"""harvest -> train --tasks -> adopt through the command line, against the loopback server: a
user who keeps asking for the same fix ("no — always put the risks first") gets a skill that
does it, certified on held-out requests; corrections that contradict each other stage nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import edit, write_project

runner = CliRunner()
RULE = "Always put the ## Risks section first in every report."
WORDS = re.findall(
    r"\w+",
    "billing search payments checkout onboarding mobile ledger identity storage pricing "
    "catalog shipping returns inventory loyalty fraud analytics support email calendar "
    "maps export import backup audit compliance hiring payroll legal security travel "
    "warehouse forecasting marketing partnerships recruiting facilities procurement "
    "translation documentation accessibility localization telemetry caching networking",
)


def sessions_file(path: Path, corrections: list[str]) -> None:
    """One session per (request, correction): the agent answers with the status first."""
    lines = []
    requests = [f"Write a report on {w} for quarter q{i}" for i, w in enumerate(WORDS)]
    requests += [f"Draft the {w} memo r{i}" for i, w in enumerate(WORDS)]
    for i, (request, correction) in enumerate(zip(requests, corrections, strict=False)):
        messages = [
            {"role": "user", "content": request},
            {"role": "assistant", "content": "## Status\nOn track.\n\n## Risks\nNone."},
            {"role": "user", "content": correction},
        ]
        lines.append(json.dumps({"id": f"s{i}", "cwd": str(path.parent), "messages": messages}))
    path.write_text("\n".join(lines) + "\n")


def answer_of(prompt: str) -> str:
    return prompt.split("## The answer", 1)[-1].split("## What to write", 1)[0]


def world(body: dict[str, Any]) -> str:
    """The loopback world: the judge, the optimizer's calls and the agent, told apart by the
    opening words of the prompt (the server sees no purpose)."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if "strict, impartial grader" in last:
        count = int(re.search(r"exactly (\d+) entries", last).group(1))  # type: ignore[union-attr]
        met = answer_of(last).strip().startswith("## Risks")
        return json.dumps({"verdicts": [{"why": "seen", "met": met}] * count})
    if "## Available skills" in last:
        return "ACTIVATE: careful-computation, detail-verifier"
    if "Propose small, targeted edits that fix the failure" in last:
        return edit("", RULE)
    if "edit budget" in last:
        return "L: 3"
    if "routing rules" in last:
        return edit("", "Prefer careful-computation.")
    if any(w in last for w in ("diagnose what the skill fails", "routing analysis", "memory")):
        return "- The reports put the status before the risks."
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if RULE in system:
        return "## Risks\nThe export is slow.\n\n## Status\nOn track."
    return "## Status\nOn track.\n\n## Risks\nThe export is slow."


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path


def test_harvest_train_adopt_the_repeated_correction(project: Path) -> None:
    sessions_file(project / "sessions.jsonl", ["no — always put the risks first"] * 2 * len(WORDS))
    mined = runner.invoke(
        app, ["harvest", "--source", "jsonl", "--path", "sessions.jsonl", "-o", "tasks.jsonl"]
    )
    assert mined.exit_code == 0, mined.output
    said = f"recurring correction ({2 * len(WORDS)} sessions): Always put the risks first."
    assert said in mined.output
    held = [json.loads(x) for x in Path("tasks.heldout.jsonl").read_text().splitlines()]
    assert len(held) >= 6  # enough held-out requests for the certificate to decide
    with FakeServer(responder=world) as server:
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
