"""`moscopt plan --no-pilot` for numbers the config accepts (issue 38, item 9): the planner's
work does not grow with what it counts. Epochs are counted in closed form, and the power figure
simulates at most `SIMULATED_LOOKS` looks per decision whatever `optimizer.max_val_samples` is
(a floor on power past it, said in the plan)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.optimizer.policies import signflip as acceptance
from moscopt.planning import power

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
BIG = ["--epochs", "1000000000000", "--set", "optimizer.max_val_samples=100000"]
NO_PILOT = [
    "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base",
    "http://127.0.0.1:9", "--data", "addition.jsonl", "--n", "3", "--k", "2", "--no-pilot",
]  # fmt: skip


def test_a_plan_of_huge_numbers_returns(project: Path) -> None:
    """A hang guard, not a timing: on the old code this never returned (it walked every epoch
    and simulated every look)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "moscopt", "plan", *NO_PILOT, *BIG, "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    plan = json.loads(done.stdout)
    assert plan["shape"]["epochs"] == 10**12
    assert plan["power"]["max_val_samples"] == 100000
    assert plan["power"]["simulated_looks"] == power.SIMULATED_LOOKS
    assert plan["total"]["bound"] > 10**12


def test_the_power_simulation_looks_a_bounded_number_of_times(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moscopt.planning import feasibility

    most = 2 * len(power.GAINS) * power.TRIALS * power.SIMULATED_LOOKS + 2 * feasibility.MAX_LOOKS
    looks = 0
    real = acceptance.SequentialSignFlip.look

    def counted(
        self: acceptance.SequentialSignFlip, diffs: list[float], keys: object = None
    ) -> acceptance.Look:
        nonlocal looks
        looks += 1
        if looks > most:
            raise AssertionError(f"more than {most} simulated looks")
        return real(self, diffs, keys)  # type: ignore[arg-type]

    monkeypatch.setattr(acceptance.SequentialSignFlip, "look", counted)
    result = runner.invoke(app, ["plan", *NO_PILOT, "--set", "optimizer.max_val_samples=100000"])
    assert result.exit_code == 0, result.output
    assert 0 < looks <= most
    assert f"within its first {power.SIMULATED_LOOKS} looks" in result.output


def test_a_test_of_many_looks_is_built_in_constant_space() -> None:
    test = acceptance.SequentialSignFlip(0.05, 10**15)  # the old code built a list of 10^15
    assert test.look([1.0] * 10).outcome in ("open", "crossed")
