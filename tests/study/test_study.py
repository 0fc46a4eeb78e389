"""`moscopt ablate` end to end on the loopback world: 6 configurations x 3 seeds at one budget.

In the scripted world the agent succeeds iff a skill holds the magic rule, and EditAdam finds
the rule only after seeing its first (useless) edit rejected. So the full method reaches 1.0,
the reflect-edit ablation (no rejection buffer, no memory) never does, single-skill mode (its
one skill is the one that gets the rule) matches the full method, and the no-skill baseline
scores 0. Uninterrupted, the full method's training ends at call 63, its rule accepted just
before (6 validation tasks, the fewest on which an edit can show itself better: issue 37): the
budget of 62 stops it after the rule, with little room for a resumed run whose replays make its
calls fall differently.
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
BUDGET = 62
CONFIGS = "single-skill,reflect-edit,static,distilled,no-skill"  # and full: 6 configurations
ORDER = ["full", "single-skill", "reflect-edit", "static", "distilled", "no-skill"]
SEEDS = [42, 43, 44]
RUNS = [f"{name}-s{seed}" for seed in SEEDS for name in ORDER]  # in the order a study runs them
RECORDS = "records/*-s[0-9]*[0-9].json"  # a finished run's record (not its .train/.rewound)


def ablate(url: str, root: Path, study: str) -> list[str]:
    return [
        "ablate", *common(url), "--config", str(root / "moscopt.yaml"),
        "--budget-calls", str(BUDGET), "--seeds", "3", "--only", CONFIGS, "--study", study,
    ]  # fmt: skip


class World:
    def __init__(self, root: Path, server: FakeServer) -> None:
        self.root, self.server = root, server

    def run(self, study: str) -> Any:
        return CliRunner().invoke(app, ablate(self.server.url, self.root, study))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = project(tmp_path_factory.mktemp("study"), REPO / "skills")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("MOSCOPT_HOME", str(root / "home" / ".moscopt"))
        with FakeServer(responder=responder) as server:
            yield World(root, server)


@pytest.fixture(scope="module")
def reference(world: World) -> dict[str, Any]:
    result = world.run("studies/ref")
    assert result.exit_code == 0, result.output
    return json.loads((world.root / "studies/ref/table.json").read_text())


def stable(table: dict[str, Any]) -> dict[str, Any]:
    """The table without wall times (everything else is a function of the results)."""
    rows = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in table["rows"]]
    return {**table, "rows": rows}


def test_a_study_runs_every_configuration_under_every_seed(
    world: World, reference: dict[str, Any]
) -> None:
    study = world.root / "studies/ref"
    rows = {r["configuration"]: r for r in reference["rows"]}
    assert list(rows) == ORDER and reference["seeds"] == SEEDS
    assert all(r["seeds_finished"] == SEEDS for r in rows.values())
    for name in ORDER:
        for seed in SEEDS:
            assert (study / "records" / f"{name}-s{seed}.json").exists()
    for name in ("full", "single-skill", "reflect-edit"):  # ordinary run directories
        assert (study / "runs" / f"{name}-s42" / "state.json").exists()
    # what each configuration scored, and its verdict against the full method
    assert rows["full"]["accuracy"]["mean"] == 1.0 and rows["full"]["difference"] is None
    assert rows["single-skill"]["difference"]["verdict"] == "identical"
    assert rows["static"]["difference"]["verdict"] == "identical"
    assert rows["distilled"]["difference"]["verdict"] == "identical"
    for name in ("reflect-edit", "no-skill"):
        d = rows[name]["difference"]
        assert d["verdict"] == "worse" and d["mean"] == -1.0 and d["seeds_agreeing"] == 3, name
        assert "worse than full, beyond the noise" in rows[name]["summary"]
    # one budget: no configuration trained on more calls; the full method stopped at it
    for name in ("full", "single-skill", "reflect-edit"):
        assert all(0 < c <= BUDGET for c in rows[name]["training"]["calls_per_seed"].values())
    assert rows["full"]["training"]["stopped_at_budget"] == 3
    # one call at a time: within one look (6 validation tasks) of the budget
    assert BUDGET - 6 <= rows["full"]["training"]["calls"] <= BUDGET
    assert rows["reflect-edit"]["training"]["stopped_at_budget"] == 0
    assert rows["static"]["training"]["derived_from"] == "full"
    assert rows["no-skill"]["training"]["calls"] == 0
    markdown = (study / "table.md").read_text()
    assert "| `reflect-edit` |" in markdown and "## Reading the table" in markdown
    plot = (study / "table.svg").read_text()
    assert plot.startswith("<svg") and "reflect-edit" in plot and "![" in markdown


def test_a_finished_study_is_not_repeated_and_gives_the_same_table(
    world: World, reference: dict[str, Any]
) -> None:
    before = world.server.count()
    records = sorted((world.root / "studies/ref/records").glob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in records]
    again = world.run("studies/ref")
    assert again.exit_code == 0, again.output
    assert world.server.count() == before  # not one call: every run was finished
    assert [p.stat().st_mtime_ns for p in records] == stamps
    table = json.loads((world.root / "studies/ref/table.json").read_text())
    assert table == reference  # even the wall times: they are the runs' own


def test_another_frame_is_refused(world: World, reference: dict[str, Any]) -> None:
    args = ablate(world.server.url, world.root, "studies/ref")
    args[args.index("--budget-calls") + 1] = str(BUDGET + 1)
    result = CliRunner().invoke(app, args)
    there = f"budget_calls: {BUDGET} there, {BUDGET + 1} now"
    assert result.exit_code == 2 and there in result.output


def moscopt(root: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "moscopt", *args],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def kill_when(proc: subprocess.Popen[bytes], records: int, study: Path, events: int) -> str:
    """SIGKILL once `records` runs are finished and the next run has logged `events` lines
    (progress, not time); the run it was in. Fails if the study ends first."""
    nxt = study / "runs" / RUNS[records] / "events.jsonl"
    while proc.poll() is None:
        done = len(list(study.glob(RECORDS)))
        lines = nxt.read_bytes().count(b"\n") if nxt.exists() else 0
        if done >= records and lines >= events:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return next(r for r in RUNS if not (study / "records" / f"{r}.json").exists())
        time.sleep(0.002)
    raise AssertionError(
        f"the study ended before the kill point: {proc.stderr and proc.stderr.read()!r}"
    )


@pytest.mark.slow
def test_sigkill_then_rerun_continues_without_repeating_finished_runs(
    world: World, reference: dict[str, Any]
) -> None:
    """Two kills (in the second run's training, and in the budget-bound full run of the second
    seed), then the same command to the end: finished runs are never touched, and the table is
    the uninterrupted one. A run killed at the instant its last answer was cached but not yet
    logged counts one call less (see moscopt.study.accounting): only its spending may differ,
    by that call."""
    study = world.root / "studies/killed"
    args = ablate(world.server.url, world.root, str(study))
    killed = []
    world.server.latency = 0.02  # a kill lands while a call is in flight, not between answers
    try:
        for records, events in ((1, 10), (6, 25)):
            finished = {p: p.read_bytes() for p in study.glob(RECORDS)}
            killed.append(kill_when(moscopt(world.root, *args), records, study, events))
            for path, data in finished.items():  # a finished run is never touched again
                assert path.read_bytes() == data
    finally:
        world.server.latency = 0.0
    done = subprocess.run(
        [sys.executable, "-m", "moscopt", *args], cwd=world.root, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert "(finished before)" in done.stderr.decode()
    print("killed in:", killed)
    table = stable(json.loads((study / "table.json").read_text()))
    for got, want in zip(table["rows"], stable(reference)["rows"], strict=True):
        name = got["configuration"]
        source = "full" if name in ("static", "distilled") else name
        hit = {r.rsplit("-s", 1)[1] for r in killed if r.rsplit("-s", 1)[0] == source}
        if hit:  # only the spending of a killed run may differ, by one call
            calls, ref = got["training"]["calls_per_seed"], want["training"]["calls_per_seed"]
            assert all(abs(calls[s] - ref[s]) <= (s in hit) for s in ref), name
            assert all(c <= BUDGET for c in calls.values()), name
            got, want = _without_spending(got), _without_spending(want)
        assert got == want, name


def _without_spending(row: dict[str, Any]) -> dict[str, Any]:
    training = {k: v for k, v in row["training"].items() if k in ("budget", "stopped_at_budget")}
    return {**row, "training": training}
