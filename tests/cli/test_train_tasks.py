"""`moscopt train --tasks FILE --held-out FILE` through the command line and the loopback
server, on a project whose skill is a whole folder (a script, a reference, a binary asset):
the folder survives training, resume, every export mode and `eval --tasks`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.judged_world import SIGN_OFF, server_responder, write_skills, write_task_files

runner = CliRunner()
ASSET = bytes(range(256))


def _project(root: Path) -> None:
    write_skills(root / "skills")
    folder = root / "skills" / "support-replies"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "lookup.py").write_text("#!/usr/bin/env python3\nprint('order')\n")
    (folder / "scripts" / "lookup.py").chmod(0o755)
    (folder / "references").mkdir()
    (folder / "references" / "tone.md").write_text("# Tone\nWarm.\n")
    (folder / "assets").mkdir()
    (folder / "assets" / "logo.bin").write_bytes(ASSET)
    (root / "moscopt.yaml").write_text("")
    write_task_files(root / "data")


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "SKILL.md"
    }


ARGS = [
    "--tasks", "data/tasks.jsonl", "--held-out", "data/held-out.jsonl", "--model",
    "openai/judged", "--n", "2", "--k", "1", "--epochs", "1", "--steps-per-epoch", "2",
    "--no-evolution", "--set", "optimizer.minibatch=4",
]  # fmt: skip


def test_train_on_task_files_with_a_whole_skill_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    original = _files(tmp_path / "skills" / "support-replies")
    with FakeServer(responder=server_responder()) as server:
        base = ["--api-base", server.url]
        result = runner.invoke(app, ["train", *ARGS, *base, "--run", "runs/r", "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output[result.output.index("{") :])
        cert = summary["certificate"]
        assert cert["verdict"] == "better" and cert["split"] == "test" and cert["low"] > 0
        trained = Path("runs/r/skills/support-replies")
        assert f"Always include: {SIGN_OFF}" in (trained / "SKILL.md").read_text()
        assert _files(trained) == original
        # the run names its task files by the spec it keeps: it resumes (here: already done)
        assert Path("runs/r/benchmark.yaml").is_file()
        again = runner.invoke(app, ["train", "--resume", "--run", "runs/r"])
        assert again.exit_code == 2 and "already finished" in again.output
        for mode in ("mixture", "static", "topq", "agents"):
            out = runner.invoke(app, ["export", "--mode", mode, "--run", "runs/r"])
            assert out.exit_code == 0, (mode, out.output)
            exported = Path(f"runs/r/exports/{mode}/skills/support-replies")
            assert _files(exported) == original, mode
        held = runner.invoke(
            app, ["eval", "--tasks", "data/held-out.jsonl", "--run", "runs/r", *base, "--json"]
        )
        assert held.exit_code == 0, held.output
        scored = json.loads(held.output[held.output.index("{") :])
        assert scored["tasks"] == 16 and scored["score"] == 1.0
        seed = runner.invoke(
            app,
            ["eval", "--tasks", "data/held-out.jsonl", "--skills", "skills", "--model",
             "openai/judged", *base, "--json", "--out", "seed.jsonl"],
        )  # fmt: skip
        assert seed.exit_code == 0, seed.output
        assert json.loads(seed.output[seed.output.index("{") :])["score"] < 1.0


def test_a_task_file_error_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    Path("bad.jsonl").write_text('{"task_id": "a", "task": "t", "judge": {"kind": "rule"}}\n')
    result = runner.invoke(app, ["train", "--tasks", "bad.jsonl", "--no-pilot", "--dry-run"])
    assert result.exit_code == 2
    assert "bad.jsonl:1: field 'judge.rule.checks': required but missing" in result.output
    assert "Traceback" not in result.output
    both = runner.invoke(app, ["train", "--tasks", "bad.jsonl", "--benchmark", "offline"])
    assert both.exit_code == 2 and "either --benchmark or --tasks" in both.output
    lone = runner.invoke(app, ["train", "--held-out", "bad.jsonl", "--benchmark", "offline"])
    assert lone.exit_code == 2 and "--held-out goes with --tasks" in lone.output


def test_a_run_on_task_files_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(responder=server_responder()) as server:
        base = ["--api-base", server.url]
        stopped = runner.invoke(
            app, ["train", *ARGS, *base, "--run", "runs/r", "--max-calls", "25"]
        )
        assert stopped.exit_code == 1, stopped.output
        assert "moscopt train --resume" in stopped.output
        monkeypatch.chdir(tmp_path / "data")  # the run finds its task files from anywhere
        done = runner.invoke(
            app, ["train", "--resume", "--run", "../runs/r", "--max-calls", "1000", *base]
        )
        assert done.exit_code == 0, done.output
    trained = tmp_path / "runs/r/skills/support-replies"
    assert f"Always include: {SIGN_OFF}" in (trained / "SKILL.md").read_text()
    assert (trained / "assets" / "logo.bin").read_bytes() == ASSET


@pytest.mark.parametrize(("kind", "per_rollout"), [("rule", 2), ("rubric", 3)])
def test_plan_counts_the_rubric_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, per_rollout: int
) -> None:
    write_skills(tmp_path / "skills")
    (tmp_path / "moscopt.yaml").write_text("")
    write_task_files(tmp_path / "data", kind=kind)
    monkeypatch.chdir(tmp_path)
    args = ["plan", "--tasks", "data/tasks.jsonl", "--held-out", "data/held-out.jsonl"]
    result = runner.invoke(app, [*args, "--n", "2", "--k", "1", "--no-pilot", "--json"])
    assert result.exit_code == 0, result.output
    shape = json.loads(result.output)["shape"]
    assert shape["calls_per_rollout_max"] == per_rollout  # agent + gate (+ judge)


def test_a_stream_of_tasks_that_carry_their_judges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(responder=server_responder()) as server:
        args = ["stream", "--tasks", "data/tasks.jsonl", "--model", "openai/judged",
                "--api-base", server.url, "--n", "2", "--k", "1", "--run", "runs/s",
                "--no-baselines", "--json"]  # fmt: skip
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    assert data["tasks"] == 27 and 0.5 <= data["accuracy"] <= 1.0
