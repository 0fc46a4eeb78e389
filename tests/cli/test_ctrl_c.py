"""Ctrl-C ends `moscopt train` at once even while a slow step runs off the event loop (here a
grader that never returns), names the run's real path, and the run shows as interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import ADDITION_SPEC, server_responder, write_project

pytestmark = pytest.mark.slow

STUCK_GRADER = """\
import pathlib, time

def grade(task, response):
    pathlib.Path("grading-started").touch()
    time.sleep(3600)  # a grader (or a model load, an embedding) that takes forever
    return 1.0
"""


def test_ctrl_c_during_a_slow_step_exits_at_once_and_names_the_run(
    tmp_path: Path, seed_dir: Path
) -> None:
    write_project(tmp_path, seed_dir)
    spec = ADDITION_SPEC.replace("grader: exact", "grader: custom\ngrader_entry: stuck:grade")
    (tmp_path / "addition.yaml").write_text(spec)
    (tmp_path / "stuck.py").write_text(STUCK_GRADER)
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{repo}{os.pathsep}{tmp_path}", "OPENAI_API_KEY": "sk-x"}
    with FakeServer(responder=server_responder) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "moscopt",
                "train",
                "--benchmark",
                "addition.yaml",
                "--data",
                "addition.jsonl",
                "--model",
                "openai/scripted",
                "--api-base",
                server.url,
                "--n",
                "3",
                "--k",
                "2",
                "--epochs",
                "1",
                "--no-evolution",
            ],  # fmt: skip  (no --run: the hint must name the path the run got)
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            while not (tmp_path / "grading-started").exists():  # by progress, not by time
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                time.sleep(0.01)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)  # a guard against a hang, not a speed test
        finally:
            if proc.poll() is None:
                proc.kill()
    text = err.decode()
    (run,) = (tmp_path / "runs").iterdir()
    assert proc.returncode == 130, text
    assert text.count("moscopt: interrupted") == 1, text
    assert f"moscopt train --resume --run {run}" in text and "--run DIR" not in text
    os.chdir(tmp_path)
    try:
        shown = CliRunner().invoke(app, ["status"])
    finally:
        os.chdir(repo)
    assert shown.exit_code == 0, shown.output
    # gone before it could record that it stopped (interrupted), or after (stopped): never running
    status = "interrupted" if "(interrupted, benchmark" in shown.output else "stopped"
    assert f"({status}, benchmark" in shown.output and "running" not in shown.output
    assert f"continue it with moscopt train --resume --run {run}" in " ".join(shown.output.split())
