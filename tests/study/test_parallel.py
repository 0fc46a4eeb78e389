"""A study's runs at once, under one cap (issue 29): what they decide, the table, the cap, the
progress, and a kill while several runs are live.

The world is the scripted loopback one of `test_study.py`, with `--concurrency 3` and a budget
no run reaches (so a run's calls do not depend on which of its concurrent calls came first).
The reference is the same study run one run at a time (`--runs-at-once 1`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from study_world import common, project, responder
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer

REPO = Path(__file__).resolve().parents[2]
CAP = 3
CONFIGS = "reflect-edit,static,no-skill"  # and full: 4 configurations x 2 seeds
RUNS = [f"{c}-s{s}" for s in (42, 43) for c in ("full", "reflect-edit", "static", "no-skill")]
DECISIONS = ("train_start", "edit", "evolution")


def ablate(url: str, root: Path, study: str, *extra: str) -> list[str]:
    args = [
        "ablate", *common(url), "--config", str(root / "moscopt.yaml"), "--budget-calls", "80",
        "--seeds", "2", "--only", CONFIGS, "--study", study, *extra,
    ]  # fmt: skip
    args[args.index("--concurrency") + 1] = str(CAP)
    return args


class World:
    def __init__(self, root: Path, server: FakeServer) -> None:
        self.root, self.server = root, server

    def run(self, study: str, *extra: str) -> Any:
        return CliRunner().invoke(app, ablate(self.server.url, self.root, study, *extra))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = project(tmp_path_factory.mktemp("parallel"), REPO / "skills")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("MOSCOPT_HOME", str(root / "home" / ".moscopt"))
        with FakeServer(responder=responder) as server:
            yield World(root, server)


def stable(table: dict[str, Any]) -> dict[str, Any]:
    rows = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table["rows"]]
    return {**table, "rows": rows}


def decisions(study: Path) -> dict[str, Any]:
    """Each trained run's decisions in its order, and its validations (without their times;
    a run's concurrent validations are logged as they finish, even when it runs alone)."""
    out = {}
    for events in sorted((study / "runs").glob("*/events.jsonl")):
        lines = [json.loads(line) for line in events.read_text().splitlines()]
        lines = [{k: v for k, v in e.items() if k != "t"} for e in lines]
        validations = sorted(
            json.dumps(e, sort_keys=True) for e in lines if e["type"] == "validation"
        )
        out[events.parent.name] = ([e for e in lines if e["type"] in DECISIONS], validations)
    return out


@pytest.fixture(scope="module")
def sequential(world: World) -> Path:
    result = world.run("studies/one-at-a-time", "--runs-at-once", "1")
    assert result.exit_code == 0, result.output
    return world.root / "studies/one-at-a-time"


def progress_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"event"')]


def test_runs_at_once_decide_and_tabulate_exactly_as_one_at_a_time(
    world: World, sequential: Path
) -> None:
    world.server.reset()
    world.server.latency = 0.01  # calls overlap: several runs are in flight together
    try:
        result = world.run("studies/at-once", "--json")
    finally:
        world.server.latency = 0.0
    assert result.exit_code == 0, result.output
    at_once = world.root / "studies/at-once"
    # never more than --concurrency requests in flight for the whole study, and it was used
    assert world.server.max_in_flight == CAP
    # the same decisions, run by run, and the same table
    got, want = decisions(at_once), decisions(sequential)
    assert sorted(got) == ["full-s42", "full-s43", "reflect-edit-s42", "reflect-edit-s43"]
    assert any(e["type"] == "edit" and e["status"] == "accepted" for e in got["full-s42"][0])
    assert got == want
    table = json.loads((at_once / "table.json").read_text())
    assert stable(table) == stable(json.loads((sequential / "table.json").read_text()))
    # the --json progress is about the study as a whole: several runs were live at once
    lines = progress_lines(result.output)
    assert {e["event"] for e in lines} >= {"start", "done"}
    studies = [e["study"] for e in lines]
    assert max(s["runs"]["running"] for s in studies) > 1
    assert studies[-1]["runs"] == {"done": 8, "running": 0, "waiting": 0, "total": 8}
    assert studies[-1]["training_budget"] == 4 * 80  # full and reflect-edit, two seeds
    trained = [r for r in table["rows"] if r["configuration"] in ("full", "reflect-edit")]
    assert studies[-1]["training_calls"] == sum(
        sum(r["training"]["calls_per_seed"].values()) for r in trained
    )
    assert studies[-1]["eta_seconds"] == 0.0
    # a deployment row starts only once its seed's full run is finished
    order = [(e["event"], e["run"]) for e in lines if e["event"] in ("start", "done")]
    for seed in (42, 43):
        assert order.index(("done", f"full-s{seed}")) < order.index(("start", f"static-s{seed}"))


def test_a_study_is_capped_by_runs_at_once(world: World, sequential: Path) -> None:
    """--runs-at-once 2: never more than two runs live (what bounds the study's memory)."""
    result = world.run("studies/two", "--json", "--runs-at-once", "2")
    assert result.exit_code == 0, result.output
    studies = [e["study"] for e in progress_lines(result.output)]
    assert max(s["runs"]["running"] for s in studies) == 2
    table = json.loads((world.root / "studies/two/table.json").read_text())
    assert stable(table) == stable(json.loads((sequential / "table.json").read_text()))


def moscopt(root: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "moscopt", *args], cwd=root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_a_study_killed_with_several_runs_live_continues_to_the_same_table(
    world: World, sequential: Path
) -> None:
    """SIGKILL once one run is finished and two others have logged calls (progress, not time),
    then the same command to the end: the finished record is untouched, the killed runs
    resume, and the table is the one-at-a-time table."""
    study = world.root / "studies/killed"
    args = ablate(world.server.url, world.root, str(study))
    world.server.latency = 0.01
    try:
        proc = moscopt(world.root, *args)
        while proc.poll() is None:
            records = list(study.glob("records/*-s[0-9]*[0-9].json"))
            logged = [
                p for p in study.glob("runs/*/events.jsonl") if p.read_bytes().count(b"\n") >= 15
            ]
            if (
                records
                and len(logged) >= 2
                and any(not (study / "records" / f"{p.parent.name}.json").exists() for p in logged)
            ):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.002)
        else:
            raise AssertionError(f"the study ended before the kill point: {proc.stderr!r}")
    finally:
        world.server.latency = 0.0
    finished = {p: p.read_bytes() for p in study.glob("records/*-s[0-9]*[0-9].json")}
    assert 0 < len(finished) < len(RUNS)
    done = subprocess.run(
        [sys.executable, "-m", "moscopt", *args], cwd=world.root, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert "(finished before)" in done.stderr.decode()
    for path, data in finished.items():
        assert path.read_bytes() == data
    table = stable(json.loads((study / "table.json").read_text()))
    want = stable(json.loads((sequential / "table.json").read_text()))
    for got_row, want_row in zip(table["rows"], want["rows"], strict=True):
        # a run killed the instant an answer was cached, before it was logged, counts one call
        # less (moscopt.study.accounting): only that may differ
        calls, ref = got_row["training"]["calls_per_seed"], want_row["training"]["calls_per_seed"]
        assert all(abs(calls[s] - ref[s]) <= 1 for s in ref), got_row["configuration"]
        assert _without_spending(got_row) == _without_spending(want_row)


def _without_spending(row: dict[str, Any]) -> dict[str, Any]:
    training = {k: v for k, v in row["training"].items() if k in ("budget", "stopped_at_budget")}
    return {**row, "training": training}


def test_ctrl_c_stops_every_live_run_and_the_rerun_continues_them(
    world: World, sequential: Path
) -> None:
    """SIGINT (Ctrl-C) once two runs are live and logging: the study exits 130 saying how to
    continue, every unfinished run it started is saved as stopped, and the same command
    finishes the study with the one-at-a-time table (spending of a cut run aside)."""
    study = world.root / "studies/interrupted"
    args = ablate(world.server.url, world.root, str(study))
    world.server.latency = 0.01
    try:
        proc = moscopt(world.root, *args)
        while proc.poll() is None:
            logged = [
                p for p in study.glob("runs/*/events.jsonl") if p.read_bytes().count(b"\n") >= 10
            ]
            if len(logged) >= 2:
                proc.send_signal(signal.SIGINT)
                break
            time.sleep(0.002)
        _, stderr = proc.communicate(timeout=120)
    finally:
        world.server.latency = 0.0
    assert proc.returncode == 130, stderr.decode()[-3000:]
    assert "interrupted; rerun the same command to continue" in stderr.decode()
    unfinished = [
        p.parent
        for p in study.glob("runs/*/state.json")
        if not (study / "records" / f"{p.parent.name}.json").exists()
        and not (study / "records" / f"{p.parent.name}.train.json").exists()
    ]
    assert unfinished  # some run was cut in its training
    for run in unfinished:
        assert json.loads((run / "state.json").read_text())["status"] == "stopped", run.name
    done = subprocess.run(
        [sys.executable, "-m", "moscopt", *args], cwd=world.root, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    table = stable(json.loads((study / "table.json").read_text()))
    want = stable(json.loads((sequential / "table.json").read_text()))
    for got_row, want_row in zip(table["rows"], want["rows"], strict=True):
        calls, ref = got_row["training"]["calls_per_seed"], want_row["training"]["calls_per_seed"]
        assert all(abs(calls[s] - ref[s]) <= 1 for s in ref), got_row["configuration"]
        assert _without_spending(got_row) == _without_spending(want_row)
