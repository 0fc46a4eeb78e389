"""`moscopt plan` / `train --dry-run`: the count checked against real training runs on the
loopback scripted world (the agent succeeds once a skill holds the magic rule)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.planning.model import Measures, Shape, count, reflect_bound, worst_case
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

runner = CliRunner()
TOLERANCE = 0.15  # expected vs actual calls, for a run as long as the pilot can see


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(responder=server_responder) as s:
        yield s


def args(url: str, *extra: str) -> list[str]:
    return [
        "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--n", "3", "--k", "2", "--epochs", "1",
        "--steps-per-epoch", "2", *extra,
    ]  # fmt: skip


def plan(url: str, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", *args(url, *extra), "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def train(url: str, run: str, *extra: str) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["train", *args(url, *extra), "--run", run])
    assert result.exit_code == 0, result.output
    lines = Path(run, "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == "llm_call"]


def test_plan_then_train_calls_within_the_bound_and_near_the_expected_count(
    project: Path, server: FakeServer
) -> None:
    planned = plan(server.url, "--no-evolution")
    pilot = planned["pilot"]
    # the pilot: 4 rollouts (gate + agent) and a reflect + propose for each of the 2 targets
    assert pilot["rollouts"] == 4 and pilot["calls"] == 12 == server.count()
    assert pilot["calls_per_rollout"] == 2.0 and pilot["targets"] == 2
    assert pilot["proposals_changed"] == 0.5  # the other skill's anchor matches nothing
    calls = train(server.url, "runs/r1", "--no-evolution", "--no-cache")
    total = planned["total"]
    assert len(calls) <= total["bound"]
    assert abs(len(calls) - total["calls"]) <= TOLERANCE * total["calls"], (len(calls), total)
    by_phase = {p["phase"] + ":" + p["part"]: p for p in planned["phases"]}
    rollouts = [c for c in calls if c["phase"] == "skills" and c["purpose"] in ("gate", "agent")]
    skills = by_phase["skills:rollouts"]["calls"] + by_phase["skills:validation"]["calls"]
    assert abs(len(rollouts) - skills) <= TOLERANCE * skills
    reflect = [c for c in calls if c["purpose"] in ("reflect-skill", "propose-skill")]
    assert len(reflect) == by_phase["skills:reflect/propose"]["calls"]


def test_the_pilot_is_the_runs_first_step_so_training_reuses_its_answers(
    project: Path, server: FakeServer
) -> None:
    plan(server.url, "--no-evolution")
    spent = server.count()
    calls = train(server.url, "runs/r2", "--no-evolution")
    hits = [c for c in calls if c.get("cache_hit")]
    assert len(hits) >= spent  # every pilot answer is read back, not asked again


def test_the_bound_holds_with_evolution_over_two_epochs(project: Path, server: FakeServer) -> None:
    for extra in (("--epochs", "2"), ("--acceptance", "strict", "--steps-per-epoch", "4")):
        evo = ("--set", "evolution.embedding_model=difflib", *extra)
        planned = plan(server.url, *evo)
        run = f"runs/{extra[1]}"
        calls = train(server.url, run, *evo, "--no-cache")
        assert planned["shape"]["evolution_cycles"] >= 1
        assert any(c["purpose"].startswith("evolve-") for c in calls)
        assert len(calls) <= planned["total"]["bound"], extra
        # learning ends the failures the pilot saw, so the expected count is an upper estimate
        assert len(calls) <= 1.5 * planned["total"]["calls"]


def test_no_pilot_makes_no_call_and_counts_the_worst_case(
    project: Path, server: FakeServer
) -> None:
    planned = plan(server.url, "--no-pilot", "--latency", "0.5")
    assert server.count() == 0 and planned["pilot"] is None
    piloted = plan(server.url)
    assert planned["total"]["bound"] == piloted["total"]["bound"]  # the bound is the config's
    assert planned["total"]["calls"] >= piloted["total"]["calls"]
    assert planned["total"]["seconds"] == pytest.approx(0.5 * planned["total"]["waves"], 0.01)
    table = runner.invoke(app, ["plan", *args(server.url, "--no-pilot")])
    assert table.exit_code == 0 and "at most" in table.stdout and "total" in table.stdout
    assert "certificate" in table.stdout and "power: with |V|=" in table.stdout
    assert "optimizer.margin = 0.1" in table.stdout
    assert planned["power"]["detectable_gain"] is not None
    assert planned["shape"]["certificate_tasks"] > 0


def test_train_dry_run_prints_the_plan_and_trains_nothing(
    project: Path, server: FakeServer
) -> None:
    result = runner.invoke(
        app, ["train", *args(server.url), "--dry-run", "--no-pilot", "--json", "--run", "runs/x"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total"] == plan(server.url, "--no-pilot")["total"]
    assert not (project / "runs").exists() and server.count() == 0


def test_train_resume_dry_run_plans_what_is_left_of_the_run_from_its_frozen_config(
    project: Path, server: FakeServer
) -> None:
    from moscopt.run.rundir import RunDir

    stopped = runner.invoke(app, ["train", *args(server.url, "--epochs", "3"), "--run", "runs/r",
                                  "--max-calls", "6"])  # fmt: skip
    assert stopped.exit_code == 1, stopped.output
    resume = ["train", "--resume", "--run", "runs/r", "--dry-run", "--no-pilot", "--json"]
    (project / "moscopt.yaml").write_text("pool:\n  k: 1\n")  # the project moved on: not read
    before = server.count()
    first = runner.invoke(app, resume)
    assert first.exit_code == 0, first.output
    planned = json.loads(first.stdout)
    assert planned["shape"]["k"] == 2 and planned["shape"]["epochs"] == 3  # the run's config
    assert any(n.startswith("resuming ") and "0 of 3 epochs done" in n for n in planned["notes"])
    run = RunDir.open(project / "runs" / "r")
    state = run.load_state()
    run.save(state.model_copy(update={"epoch": 2}))  # as if two epochs were done
    later = json.loads(runner.invoke(app, resume).stdout)
    assert later["shape"]["epochs"] == 1 and "2 of 3 epochs done" in " ".join(later["notes"])
    assert later["total"]["calls"] < planned["total"]["calls"]
    assert server.count() == before  # no pilot, no training
    frozen = runner.invoke(app, [*resume, "--k", "1"])
    assert frozen.exit_code == 2 and "frozen config" in frozen.stderr
    run.save(state.model_copy(update={"status": "done"}))
    done = runner.invoke(app, resume)
    assert done.exit_code == 2 and "already finished" in done.stderr


def test_bad_input_is_one_line_naming_the_field(project: Path, server: FakeServer) -> None:
    result = runner.invoke(app, ["plan", *args(server.url, "--k", "5")])
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and "pool" in line and line.startswith("moscopt: error:")
    (project / "moscopt.yaml").write_text("optimizer:\n  minibatch: zero\n")
    result = runner.invoke(app, ["plan", *args(server.url, "--no-pilot")])
    assert result.exit_code == 2 and "moscopt.yaml" in result.stderr
    assert "optimizer.minibatch" in result.stderr and server.count() == 0


def shape(**changes: Any) -> Shape:
    base: dict[str, Any] = dict(
        n=4, k=2, epochs=1, batch_sizes=(4, 4), val=5, steps=1, gate_calls=1, llm_gate=True,
        interleave=True, gate_edit_steps=1, max_targets=2, minibatch=2, merge_batch=8,
        max_samples=1, autonomous=False, memory=True, evolution_epochs=0, lifecycle=False,
        eliminate=1, cobreed=True, fresh_skills=2, codream_sessions=0, concurrency=4,
    )  # fmt: skip
    return Shape(**{**base, **changes})


def test_the_count_by_hand_for_strict_acceptance() -> None:
    s = shape()
    parts = {p.part: p for p in count(s, worst_case(s))}
    # 2 steps x 4 tasks x (gate + agent)
    assert parts["rollouts"].bound == 16 and parts["rollouts"].agent_waves == 2 * 1 * 2
    # per step and target: 2 reflections (4 trajectories / M_b 2) + 1 merge + 1 proposal
    assert reflect_bound(4, 2, 8) == 3 and parts["reflect/propose"].bound == 2 * 2 * 4
    # phase start (5 x 2) + 4 decisions of 5 x 2 + a restoration after each minibatch, each
    # decision followed by the accepted pool's fresh look (5 x 2)
    assert parts["validation"].bound == 10 + 4 * 20 + 2 * 20
    assert parts["condensation"].bound == 5  # at most N skills and the gate


def test_paired_bound_and_the_pilots_measures() -> None:
    s = shape(max_samples=5)
    parts = {p.part: p for p in count(s, worst_case(s))}
    # (2*5 - 1) evaluations of |V|, and the adopted pool's fresh look
    assert parts["validation"].bound == 10 + (4 + 2) * (9 + 1) * 10
    calm = Measures(2.0, targets_per_step=1.0, applied=0.5, failure_rate=0.5, reflect_calls=1)
    quiet = {p.part: p for p in count(s, calm)}
    assert quiet["validation"].bound == parts["validation"].bound  # measures never move it
    assert quiet["validation"].agent == 10 + 2 * 1 * 0.5 * 1.9 * 10
    assert quiet["reflect/propose"].optimizer == 2 * (1 + 1)


def test_overlap_off_lengthens_the_critical_path_not_the_count() -> None:
    on, off = (shape(evolution_epochs=1, eliminate=2, overlap=o) for o in (True, False))
    a, b = count(on, worst_case(on)), count(off, worst_case(off))
    assert [p.calls for p in a] == [p.calls for p in b] and [p.bound for p in a] == [
        p.bound for p in b
    ]
    waves = {p.part: (x.optimizer_waves, p.optimizer_waves) for x, p in zip(a, b, strict=True)}
    # two targets a step: their reflect + merge + propose one after the other, not at once
    assert waves["reflect/propose"] == (2 * 3, 2 * 3 * 2)
    assert waves["start, offspring, validation"] == (1, 2)  # mutation and crossover in turn
    assert waves["condensation"][1] > waves["condensation"][0]


def test_evolution_counts_exactly_m_offspring_and_a_non_inferiority_decision() -> None:
    s = shape(evolution_epochs=2, max_samples=5, eliminate=1)
    evo = {p.part: p for p in count(s, worst_case(s))}["start, offspring, validation"]
    assert evo.optimizer == 2 * 1  # M = 1 per cycle, co-breeding or not (it was 2)
    assert evo.agent == 2 * 5.0 * 5 * 2  # ~5 rollouts per validation task per decision
    assert "non-inferiority decisions: about 3 looks each" in evo.notes


def test_the_certificate_is_counted_and_off_with_zero_samples() -> None:
    on = {p.part: p for p in count(shape(certificate=8), worst_case(shape()))}
    assert on["certificate"].bound == 2 * 8 * 2 and on["certificate"].agent == 2 * 8 * 2
    off = {p.part: p for p in count(shape(), worst_case(shape()))}
    assert off["certificate"].bound == 0 and off["certificate"].calls == 0


def test_power_names_the_smallest_detectable_gain_and_what_more_tasks_buy() -> None:
    from moscopt.planning.power import acceptance_rate, power_lines, power_summary

    power = power_summary(10, 5, 0.95, 0.1)
    assert (
        power["detectable_gain"] == 0.25 and power["detectable_gain_with_twice_the_tasks"] == 0.2
    )  # 10 and 20 tasks, each a block however many samples (issue 37)
    assert acceptance_rate(0.0, 10, 5, 0.95) <= 0.08  # a no-op: about alpha
    text = " ".join(power_lines(power))
    assert "from a true gain of +0.25" in text and "20 validation tasks per look: +0.20" in text
    assert "every look repeats the same 10 tasks" in text
    drawn = " ".join(power_lines(power_summary(10, 5, 0.95, 0.1, pool=30)))
    assert "draws 10 of the 30 held-out validation tasks" in drawn and "3 of the 5 look" in drawn
    assert "optimizer.margin = 0.1" in text
