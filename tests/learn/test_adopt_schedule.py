"""`moscopt adopt` / `--undo` round trips, and `moscopt schedule` / `unschedule` with a fake
crontab (and a fake systemctl) on PATH."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.learn import schedule

runner = CliRunner()
FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "v1-stopped"
BINARY = bytes(range(256)) * 4


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `root`: its bytes and permission bits."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run whose `cautious-planner` skill holds a script (0755) and a binary asset."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, path)
    skill = path / "skills" / "cautious-planner"
    (skill / "scripts").mkdir()
    (skill / "scripts" / "check.sh").write_text("#!/bin/sh\necho checked\n")
    os.chmod(skill / "scripts" / "check.sh", 0o755)
    (skill / "assets").mkdir()
    (skill / "assets" / "logo.png").write_bytes(BINARY)
    return path


def certify(run: Path, verdict: str) -> None:
    """Append a certificate event to the run's log (and count it in the state)."""
    line = json.dumps({"t": "2026-12-01T09:00:00+00:00", "type": "certificate", "verdict": verdict})
    with (run / "events.jsonl").open("a") as f:
        f.write(line + "\n")
    state = json.loads((run / "state.json").read_text())
    state["events_bytes"] = (run / "events.jsonl").stat().st_size
    (run / "state.json").write_text(json.dumps(state))


def test_adopt_copies_skill_folders_whole_and_undo_restores_exactly(
    run: Path, tmp_path: Path
) -> None:
    to = tmp_path / ".claude" / "skills"
    (to / "cautious-planner").mkdir(parents=True)
    (to / "cautious-planner" / "SKILL.md").write_text("---\nname: cautious-planner\n---\nold\n")
    (to / "mine").mkdir()
    (to / "mine" / "SKILL.md").write_text("---\nname: mine\n---\nmy own skill\n")
    before = tree(to)

    result = runner.invoke(app, ["adopt", "--run", str(run), "--to", str(to)])
    assert result.exit_code == 0, result.output
    adopted = tree(to / "cautious-planner")
    assert adopted == tree(run / "skills" / "cautious-planner")  # every file, bytes and mode
    assert adopted["scripts/check.sh"][1] == 0o755
    assert adopted["assets/logo.png"][0] == BINARY
    assert not (to / "gate").exists()  # the router goes only where a seed library has one
    assert tree(to / "mine") == {k[5:]: v for k, v in before.items() if k.startswith("mine/")}
    assert "diff --git" in result.output and "-old" in result.output
    assert "Binary files" in result.output and "new file mode 100755" in result.output
    assert "1 replaced, 2 new" in result.output

    undone = runner.invoke(app, ["adopt", "--undo", "--to", str(to)])
    assert undone.exit_code == 0, undone.output
    assert tree(to) == before
    again = runner.invoke(app, ["adopt", "--undo", "--to", str(to)])
    assert again.exit_code == 2 and "no adoption to undo" in again.output


def test_one_skill_and_the_gate_of_a_seed_library(run: Path, tmp_path: Path) -> None:
    seed = tmp_path / "skills"
    shutil.copytree(run / "skills" / "gate", seed / "gate")
    (seed / "gate" / "SKILL.md").write_text((seed / "gate" / "SKILL.md").read_text() + "\nold\n")
    result = runner.invoke(app, ["adopt", "--run", str(run), "--skill", "detail-verifier"])
    assert result.exit_code == 0, result.output  # default --to: the project's skills/
    assert sorted(p.name for p in seed.iterdir()) == ["detail-verifier", "gate"]
    everything = runner.invoke(app, ["adopt", "--run", str(run)])
    assert everything.exit_code == 0
    assert tree(seed / "gate") == tree(run / "skills" / "gate")
    bad = runner.invoke(app, ["adopt", "--run", str(run), "--skill", "nope"])
    assert bad.exit_code == 2 and "no skill 'nope'" in bad.output


def test_a_run_certified_worse_is_refused_unless_forced(run: Path, tmp_path: Path) -> None:
    certify(run, "worse")
    to = tmp_path / "agent-skills"
    refused = runner.invoke(app, ["adopt", "--run", str(run), "--to", str(to)])
    assert refused.exit_code == 2 and "WORSE" in refused.output and not to.exists()
    forced = runner.invoke(app, ["adopt", "--run", str(run), "--to", str(to), "--force"])
    assert forced.exit_code == 0 and "certificate: worse" in forced.output
    assert (to / "cautious-planner" / "scripts" / "check.sh").is_file()


FAKE_CRONTAB = """#!/bin/sh
F="$FAKE_CRONTAB"
case "$1" in
  -l) [ -f "$F" ] || { echo "no crontab for user" >&2; exit 1; }; cat "$F";;
  -) cat > "$F";;
  *) exit 2;;
esac
"""
FAKE_SYSTEMCTL = """#!/bin/sh
echo "$@" >> "$FAKE_SYSTEMCTL_LOG"
"""


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("crontab", FAKE_CRONTAB), ("systemctl", FAKE_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        os.chmod(bin_dir / name, 0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_CRONTAB", str(tmp_path / "crontab.txt"))
    monkeypatch.setenv("FAKE_SYSTEMCTL_LOG", str(tmp_path / "systemctl.log"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return bin_dir


def test_schedule_installs_one_crontab_line_and_unschedule_removes_exactly_it(
    fake_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path
) -> None:
    table = tmp_path / "crontab.txt"
    table.write_text("0 1 * * * backup.sh\n")
    project = tmp_path / "proj"
    project.mkdir()
    refused = runner.invoke(app, ["schedule", "--source", "codex", "--project", str(project)])
    assert refused.exit_code == 2 and "budget" in refused.output
    assert table.read_text() == "0 1 * * * backup.sh\n"

    args = ["schedule", "--source", "codex", "--project", str(project), "--max-calls", "300"]
    for at in ("02:30", "04:05"):  # scheduling again replaces this project's job
        result = runner.invoke(app, [*args, "--at", at])
        assert result.exit_code == 0, result.output
    lines = table.read_text().splitlines()
    assert lines[0] == "0 1 * * * backup.sh" and len(lines) == 2
    assert lines[1].startswith("5 4 * * * cd ") and "learn --source codex" in lines[1]
    assert (
        "--max-calls 300" in lines[1] and str(project / ".moscopt/schedule/learn.log") in lines[1]
    )

    (schedule.folder(project) / schedule.LOG).write_text("harvest: 3 session(s)\n")
    assert schedule.describe(project)[-1] == "  | harvest: 3 session(s)"
    shutil.copytree(seed_dir, project / "skills")  # a moscopt project too
    monkeypatch.chdir(project)  # `status` shows the schedule of the project it is run in
    shown = runner.invoke(app, ["status", "--project"])
    assert shown.exit_code == 0, shown.output
    assert "schedule: nightly moscopt learn at 04:05 via cron" in shown.output
    assert "  | harvest: 3 session(s)" in shown.output
    gone = runner.invoke(app, ["unschedule", "--project", str(project)])
    assert gone.exit_code == 0 and "removed" in gone.output
    assert table.read_text() == "0 1 * * * backup.sh\n"
    assert runner.invoke(app, ["unschedule", "--project", str(project)]).output.strip() == (
        "nothing scheduled"
    )


def test_without_crontab_a_systemd_user_timer_is_installed_and_removed(
    fake_bin: Path, tmp_path: Path
) -> None:
    (fake_bin / "crontab").unlink()
    project = tmp_path / "proj"
    project.mkdir()
    result = runner.invoke(
        app, ["schedule", "--source", "claude-code", "--project", str(project), "--max-cost", "2"]
    )
    assert result.exit_code == 0, result.output
    units = tmp_path / "config" / "systemd" / "user"
    [timer] = units.glob("*.timer")
    assert "OnCalendar=*-*-* 03:17:00" in timer.read_text()
    assert "--max-cost 2.0" in next(units.glob("*.service")).read_text()
    log = (tmp_path / "systemctl.log").read_text()
    assert f"--user enable --now {timer.name}" in log
    runner.invoke(app, ["unschedule", "--project", str(project)])
    assert list(units.iterdir()) == []
    assert f"--user disable --now {timer.name}" in (tmp_path / "systemctl.log").read_text()
