"""One set of edit-decision counts, in one vocabulary (accepted / rejected / unusable / not
applied), in `status`'s summary and breakdown, its JSON and the report; `status` without --run
shows the project's latest run (--project: the project)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.report.page import write_report
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import write_project

runner = CliRunner()
WORDS = r"(\d+) accepted, (\d+) rejected, (\d+) unusable, (\d+) not applied"


def test_status_summary_breakdown_json_and_report_agree(
    scripted_run: RunDir, tmp_path: Path
) -> None:
    shown = runner.invoke(app, ["status", "--run", str(scripted_run.path)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    summary = re.search(rf"edits: {WORDS}", shown.output)
    assert summary is not None, shown.output
    names = ("accepted", "rejected", "unusable", "not applied")
    total = dict(zip(names, map(int, summary.groups()), strict=True))
    broken_down = dict.fromkeys(total, 0)
    for line in shown.output.splitlines():
        if line.startswith("  ") and ":" in line:
            for n, word in re.findall(r"(\d+) (accepted|rejected|unusable|not applied)", line):
                broken_down[word] += int(n)
    assert total == broken_down and total["rejected"] >= 1 and total["not applied"] >= 1
    data = json.loads(
        runner.invoke(app, ["status", "--run", str(scripted_run.path), "--json"]).stdout
    )
    edits = data["edits"]
    as_json = {w: edits[w.replace(" ", "_")] for w in total}
    assert as_json == total
    assert edits["by_status"] == {k.replace(" ", "_"): v for k, v in total.items()}
    out = tmp_path / "report.md"
    write_report(scripted_run, out)
    words = ", ".join(f"{n} {w}" for w, n in total.items())
    assert f"| edits | {words} |" in out.read_text()


@pytest.fixture
def project_with_runs(tmp_path: Path, seed_dir: Path, scripted_run: RunDir) -> Path:
    write_project(tmp_path, seed_dir)
    shutil.copytree(scripted_run.path, tmp_path / "runs" / "older")
    shutil.copytree(scripted_run.path, tmp_path / "runs" / "newer")
    state = json.loads((tmp_path / "runs/newer/state.json").read_text())
    state["created_at"] = "2999-01-01T00:00:00+00:00"
    (tmp_path / "runs/newer/state.json").write_text(json.dumps(state))
    return tmp_path


def test_status_without_run_shows_the_latest_run(
    project_with_runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project_with_runs)
    latest = runner.invoke(app, ["status", "--json"])
    assert latest.exit_code == 0, latest.output
    assert json.loads(latest.stdout)["run"].endswith("runs/newer")
    project = runner.invoke(app, ["status", "--project", "--json"])
    assert project.exit_code == 0, project.output
    runs = json.loads(project.stdout)["runs"]
    assert {r["run"] for r in runs} == {"runs/older", "runs/newer"}
    both = runner.invoke(app, ["status", "--project", "--run", "runs/older"])
    assert both.exit_code == 2 and "--project" in both.output


def test_status_before_the_first_run_shows_the_project(
    tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    shown = runner.invoke(app, ["status"])
    assert shown.exit_code == 0, shown.output
    assert "no runs yet" in shown.output
