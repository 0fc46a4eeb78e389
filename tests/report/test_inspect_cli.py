"""`moscopt log`, `diff` and `status --run` on runs of the scripted environment; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import MAGIC, VAGUE

runner = CliRunner()


def test_log_lists_accepted_and_rejected_edits_with_scores(scripted_run: RunDir) -> None:
    result = runner.invoke(app, ["log", "--run", str(scripted_run.path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "careful-computation  rejected  0.000 -> 0.000" in out
    assert f"add at end: '{VAGUE}'" in out
    assert "careful-computation  accepted  0.000 -> 1.000" in out
    assert f"add at end: '{MAGIC}'" in out and "reasoning: r" in out
    assert "detail-verifier  not applied  not validated" in out
    assert "gate  rejected  1.000 -> 1.000" in out

    data = json.loads(runner.invoke(app, ["log", "--run", str(scripted_run.path), "--json"]).stdout)
    decided = [(e["step"], e["target"], e["status"], e["before"], e["after"]) for e in data]
    assert (0, "careful-computation", "rejected", 0.0, 0.0) in decided
    assert (1, "careful-computation", "accepted", 0.0, 1.0) in decided
    assert [e["step"] for e in data] == sorted(e["step"] for e in data)

    only = runner.invoke(
        app, ["log", "--run", str(scripted_run.path), "--skill", "careful-computation", "--json"]
    )
    assert {e["target"] for e in json.loads(only.stdout)} == {"careful-computation"}


def test_log_shows_evolution(evolved_run: RunDir) -> None:
    result = runner.invoke(app, ["log", "--run", str(evolved_run.path)])
    assert result.exit_code == 0, result.output
    assert "evolution  accepted  1.000 -> 1.000" in result.stdout
    assert "eliminated: detail-verifier" in result.stdout  # the top skill is a parent, kept
    data = json.loads(runner.invoke(app, ["log", "--run", str(evolved_run.path), "--json"]).stdout)
    evo = [e for e in data if e["kind"] == "evolution"]
    assert evo[0]["accepted"] and evo[0]["added"][0].startswith("child-")
    by_child = runner.invoke(
        app, ["log", "--run", str(evolved_run.path), "--skill", evo[0]["added"][0], "--json"]
    )
    assert [e["kind"] for e in json.loads(by_child.stdout)] == ["evolution"]


def test_diff_shows_exactly_the_accepted_edit(scripted_run: RunDir) -> None:
    result = runner.invoke(app, ["diff", "careful-computation", "--run", str(scripted_run.path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "--- a/careful-computation/SKILL.md (start)"
    assert lines[1].startswith("+++ b/careful-computation/SKILL.md (step ")
    changed = [x for x in lines[2:] if x[:1] in "+-"]
    assert changed == ["+", f"+{MAGIC}"]
    before = runner.invoke(
        app,
        [
            "diff",
            "careful-computation",
            "--from",
            "0",
            "--to",
            "0",
            "--run",
            str(scripted_run.path),
        ],
    )
    assert before.exit_code == 0 and before.stdout == "" and "no change" in before.stderr


def test_diff_of_skills_added_and_removed_by_evolution(evolved_run: RunDir) -> None:
    path = str(evolved_run.path)
    gone = runner.invoke(app, ["diff", "detail-verifier", "--run", path])
    assert gone.exit_code == 0 and "+++ /dev/null" in gone.stdout
    assert "is not in the pool now" in gone.stderr and "removed at step 3" in gone.stderr
    child = json.loads(runner.invoke(app, ["log", "--run", path, "--json"]).stdout)
    name = next(e for e in child if e["kind"] == "evolution")["added"][0]
    early = runner.invoke(app, ["diff", name, "--to", "2", "--run", path])
    assert early.exit_code == 2
    assert f"skill '{name}' is neither in the pool at the start nor at step 2" in early.stderr
    assert "from step 3 (added by evolution)" in early.stderr


def test_status_json_has_the_history_fields(evolved_run: RunDir) -> None:
    result = runner.invoke(app, ["status", "--run", str(evolved_run.path), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.stdout)
    assert d["edits"]["accepted"] == 1
    assert d["certificate"]["verdict"] in ("better", "no detectable difference", "worse")
    assert d["certificate"]["line"].startswith("certificate: ")
    assert d["edits"]["by_target"]["careful-computation"] == {"accepted": 1, "rejected": 1}
    assert d["edits"]["by_status"]["not_applied"] >= 1
    assert d["evolution"][0]["eliminated"] == ["detail-verifier"]
    assert d["evolution"][0]["accepted"] is True and d["evolution"][0]["step"] == 3
    assert d["gate_restorations"] == []
    assert d["best_val_by_epoch"] == [
        {"epoch": 0, "best": 1.0, "last": 1.0},
        {"epoch": 1, "best": 1.0, "last": 1.0},
    ]
    assert d["totals"]["calls"] > 0 and "cache_hits" in d["totals"]
    assert d["synergy_top"] and d["skills"][0]["activations"] >= 0
    text = runner.invoke(app, ["status", "--run", str(evolved_run.path)]).stdout
    assert "careful-computation: 1 accepted, 1 rejected" in text
    assert (
        "evolution at step 3 (epoch 0): accepted (1.000 -> 1.000); eliminated detail-verifier"
        in text
    )
    assert "best val per epoch: 0: 1.000  1: 1.000" in text


def test_default_run_is_the_latest_of_the_project(
    scripted_run: RunDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    none = runner.invoke(app, ["log"])
    assert none.exit_code == 2 and "no run found: pass --run DIR" in none.stderr
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r1").symlink_to(scripted_run.path)
    result = runner.invoke(app, ["diff", "careful-computation"])
    assert result.exit_code == 0 and MAGIC in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["log", "--run", "{missing}"], "run directory not found"),
        (["diff", "gate", "--run", "{missing}"], "run directory not found"),
        (["report", "--run", "{missing}"], "run directory not found"),
        (["status", "--run", "{missing}"], "run directory not found"),
        (["log", "--run", "{not_a_run}"], "not a moscopt run directory"),
        (["diff", "gate", "--run", "{not_a_run}"], "not a moscopt run directory"),
        (["report", "--run", "{not_a_run}"], "not a moscopt run directory"),
        (["diff", "nope", "--run", "{run}"], "unknown skill 'nope' in this run"),
        (["log", "--skill", "nope", "--run", "{run}"], "unknown skill 'nope' in this run"),
        (["diff", "gate", "--from", "99", "--run", "{run}"], "step 99 is out of range"),
        (["diff", "gate", "--to", "-1", "--run", "{run}"], "step -1 is out of range"),
        (
            ["diff", "gate", "--from", "3", "--to", "1", "--run", "{run}"],
            "--from 3 is after --to 1",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    scripted_run: RunDir, tmp_path: Path, args: list[str], message: str
) -> None:
    paths = {
        "missing": str(tmp_path / "missing"),
        "not_a_run": str(tmp_path),
        "run": str(scripted_run.path),
    }
    result = runner.invoke(app, [a.format(**paths) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("moscopt: error: ")
    assert message in result.stderr and "Traceback" not in result.output
