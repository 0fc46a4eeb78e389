from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from moscopt.app.workspace import make_trainer
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine import Trainer
from moscopt.run.ledger import GateRestored
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import Crash, TurnTakingLM, crash_on_call
from moscopt.testing.scripted import (
    MAGIC,
    VAGUE,
    make_run,
    respond,
    scripted_lm,
    train_run,
)


def test_reflect_propose_validate_accept_and_reject(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir)
    lm = scripted_lm()
    trainer = train_run(run, config, bench, sp, seeds, lm)
    state = trainer.state
    assert state.status == "done" and state.epoch == 2
    body = (run.skills_dir / "careful-computation" / "SKILL.md").read_text()
    assert body.rstrip().endswith(MAGIC) and VAGUE not in body
    cc = state.optimizers["careful-computation"]
    assert (cc.accepted, cc.rejected) == (1, 1)
    # the regressing edit was rejected, and the next proposal for that skill was shown it
    proposals = [
        r.messages[-1]["content"]
        for r, purpose in zip(lm.history, lm.purposes, strict=True)
        if purpose == "propose-skill" and "name: careful-computation" in r.messages[-1]["content"]
    ]
    assert VAGUE not in proposals[0].split("## Edits already rejected")[1].split("## Lessons")[0]
    rejected_section = proposals[1].split("## Edits already rejected")[1].split("## Lessons")[0]
    assert VAGUE in rejected_section and "0.000 -> 0.000" in rejected_section
    edits = read_events(run.events.path, kinds={"edit"})
    accepted = [e for e in edits if e.status == "accepted"]
    assert len(accepted) == 1 and accepted[0].before == 0.0 and accepted[0].after == 1.0
    assert accepted[0].patch[0]["path"] == "/skills/careful-computation/body"
    assert any(e.status == "not_applied" for e in edits)  # bad anchors never crash
    scores = [p.score for p in state.val_history]
    assert scores == sorted(scores) and scores[-1] == 1.0  # monotone
    assert state.q["careful-computation"] > 0 and state.activations["careful-computation"] > 0
    assert cc.long_term_memory == [
        "- Adding an explicit double-check helped.",
        "- Vague advice did not.",
    ]
    assert cc.step_buffer == [] and cc.rejection_buffer == []  # epoch-local


def test_gate_editing_phase_runs_on_routing_failures(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"training.epochs": 1})
    lm = scripted_lm()
    train_run(run, config, bench, sp, seeds, lm)
    gate_edits = [e for e in read_events(run.events.path, kinds={"edit"}) if e.target == "gate"]
    # epoch 0's failures are routing cases; the skill edit already fixed validation (1.0), so
    # the gate edit cannot strictly improve it and is rejected
    assert [(e.status, e.before, e.after) for e in gate_edits] == [("rejected", 1.0, 1.0)]
    reflect = next(r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "reflect-gate")
    assert (
        "activated: careful-computation, detail-verifier -> reward 0.00"
        in reflect.messages[-1]["content"]
    )
    assert (
        "ACTIVATE" in run.load_pool().gate.body
        and "Prefer careful" not in run.load_pool().gate.body
    )


def test_single_skill_mode_makes_no_gate_call(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"pool.n": 1, "pool.k": 1})
    pool = Pool(skills=(seeds.get("careful-computation"),), gate=seeds.gate)
    state = run.load_state()
    run.save(state, pool)
    lm = scripted_lm()
    trainer = train_run(run, config, bench, sp, seeds, lm)
    assert "gate" not in lm.purposes
    assert trainer.state.optimizers["careful-computation"].accepted == 1
    assert {e.activation for e in read_events(run.events.path, kinds={"rollout"})} == {"single"}


# The scripted run makes 86 calls: crash points cover every phase of both epochs.
@pytest.mark.parametrize("crash_at", [3, 15, 30, 45, 60, 70, 80, 85])
def test_interrupted_run_resumes_to_the_same_pool(
    tmp_path: Path, seed_dir: Path, crash_at: int
) -> None:
    ref_run, config, bench, sp, seeds = make_run(
        tmp_path / "ref", seed_dir, **{"evolution.enabled": True, "credit.c_min": 1}
    )
    train_run(ref_run, config, bench, sp, seeds, scripted_lm())
    reference = ref_run.load_pool()

    run, config, bench, sp, seeds = make_run(
        tmp_path / "crash", seed_dir, **{"evolution.enabled": True, "credit.c_min": 1}
    )
    crashing = crash_on_call(crash_at, respond)

    with pytest.raises(Crash):
        train_run(run, config, bench, sp, seeds, FakeLM(responder=crashing))
    resumed = train_run(run, config, bench, sp, seeds, scripted_lm())
    assert resumed.state.status == "done"
    assert run.load_pool() == reference
    ref_state = ref_run.load_state()
    assert resumed.state.q == ref_state.q and resumed.state.synergy == ref_state.synergy
    assert resumed.state.accepted_edits() == ref_state.accepted_edits()
    assert len(read_events(run.events.path, kinds={"rollout"})) == len(
        read_events(ref_run.events.path, kinds={"rollout"})
    )


def test_no_interleaving_ablation_edits_everything_at_once(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"training.interleave": False})
    trainer = train_run(run, config, bench, sp, seeds, scripted_lm())
    edits = read_events(run.events.path, kinds={"edit"})
    assert {e.phase for e in edits} == {"skills"}  # no separate gate phase
    first = next(e for e in edits if e.status == "rejected")
    assert "careful-computation:" in first.summary and "gate:" in first.summary
    assert MAGIC in trainer.pool.get("careful-computation").body
    assert trainer.state.optimizers["gate"].rejected >= 1


@pytest.mark.parametrize(("policy", "source"), [("random", "random"), ("all", "all")])
def test_routing_ablations_make_no_gate_calls(
    tmp_path: Path, seed_dir: Path, policy: str, source: str
) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"gating.policy": policy})
    lm = scripted_lm()
    train_run(run, config, bench, sp, seeds, lm)
    assert "gate" not in lm.purposes
    rollouts = read_events(run.events.path, kinds={"rollout"})
    assert {e.activation for e in rollouts} == {source}
    assert all(len(e.skills) == (2 if policy == "random" else 3) for e in rollouts)
    assert not [e for e in read_events(run.events.path, kinds={"edit"}) if e.target == "gate"]


BROKEN = "Answer in French."


def gate_world(request: LMRequest) -> str:
    """A gate that routes away from the skill that solves the tasks when its instructions say so
    (the world depends on the gate's text in context, not on the prompt's wording)."""
    text = " ".join(m["content"] for m in request.messages)
    if BROKEN in text:
        return "ACTIVATE: cautious-planner, detail-verifier"
    return "ACTIVATE: careful-computation, detail-verifier"


def agent_world(request: LMRequest) -> str:
    return respond(request)


def restoration_trainer(tmp_path: Path, seed_dir: Path, **overrides: Any) -> Trainer:
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{"gating.rebuild_window": 2, "gating.rebuild_threshold": 0.3, **overrides},
    )
    lm = FakeLM(routes={"gate": gate_world, "agent": agent_world})
    skilled = run.load_pool().get("careful-computation")
    run.save(run.load_state(), run.load_pool().replace(skilled.with_body(skilled.body + MAGIC)))
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip

    async def start() -> None:  # the phase's score is measured in its loop
        await trainer.start_phase("skills")
        await trainer.ctx.settled()

    asyncio.run(start())
    return trainer


def batch(fallbacks: int) -> list[Any]:
    from moscopt.agent.harness import Rollout

    return [
        Rollout("t", ("a",), "fallback" if i < fallbacks else "gate", [], "", None, 0.0)
        for i in range(4)
    ]


def test_repeated_gate_parse_failures_restore_the_last_good_gate_after_validating_it(
    tmp_path: Path, seed_dir: Path
) -> None:
    trainer = restoration_trainer(tmp_path, seed_dir, **{"optimizer.acceptance": "strict"})
    good = trainer.pool.gate
    assert good is not None
    asyncio.run(trainer.gate.watch(batch(0)))  # a good step: this gate is remembered
    broken = good.with_body(good.body + f"\n{BROKEN}\n")
    trainer.ctx.pool = trainer.pool.replace(broken)
    asyncio.run(trainer.gate.watch(batch(3)))
    assert trainer.pool.gate == broken  # one bad step is not enough
    asyncio.run(trainer.gate.watch(batch(4)))
    assert trainer.pool.gate == good  # two consecutive steps above 30%: restored
    (event,) = read_events(trainer.ctx.run.events.path, kinds={"gate_restored"})
    assert isinstance(event, GateRestored)
    assert event.accepted and event.source == "last_good" and event.decision is not None
    assert event.checkpoint and (trainer.ctx.run.checkpoints_dir / event.checkpoint).is_file()
    # the restored gate was validated: a validation event of its pool precedes the restoration
    pools = [e.pool for e in read_events(trainer.ctx.run.events.path, kinds={"validation"})]  # type: ignore[union-attr]
    assert event.pool in pools


def test_a_restored_gate_that_validates_worse_is_not_kept(tmp_path: Path, seed_dir: Path) -> None:
    """Regression: restoration swapped the gate without validation, undoing accepted edits."""
    trainer = restoration_trainer(tmp_path, seed_dir, **{"optimizer.acceptance": "strict"})
    good = trainer.pool.gate
    assert good is not None
    # the remembered gate is the broken one; the current gate is fine
    trainer.ctx.state.last_good_gate = good.with_body(good.body + f"\n{BROKEN}\n").to_json()
    asyncio.run(trainer.gate.restore())
    assert trainer.pool.gate == good
    (event,) = read_events(trainer.ctx.run.events.path, kinds={"gate_restored"})
    assert isinstance(event, GateRestored) and not event.accepted and event.checkpoint is None
    scores = [p.score for p in trainer.state.val_history]
    assert scores == sorted(scores)


def test_with_no_good_gate_ever_seen_the_seed_gate_is_the_candidate(
    tmp_path: Path, seed_dir: Path
) -> None:
    trainer = restoration_trainer(tmp_path, seed_dir)
    seed_gate = trainer.ctx.seeds.gate
    assert seed_gate is not None
    broken = seed_gate.with_body(seed_gate.body + f"\n{BROKEN}\n")
    trainer.ctx.pool = trainer.pool.replace(broken)
    trainer.ctx.state.last_good_gate = None
    for _ in range(2):
        asyncio.run(trainer.gate.watch(batch(4)))
    assert trainer.pool.gate == seed_gate
    (event,) = read_events(trainer.ctx.run.events.path, kinds={"gate_restored"})
    assert isinstance(event, GateRestored) and event.source == "seed" and event.accepted


def test_autonomous_schedule_asks_the_optimizer_for_the_budget(
    tmp_path: Path, seed_dir: Path
) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"optimizer.schedule": "autonomous", "training.epochs": 1}
    )
    lm = scripted_lm()  # answers the budget prompt with "L: 3"
    train_run(run, config, bench, sp, seeds, lm)
    asked = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "budget"]
    proposals = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "propose-skill"]
    # one budget per step, for all of its targets, from the minibatch's hard and soft scores
    # (regression: the budget was asked per target, given the validation best as both)
    assert asked and len(asked) == run.load_state().step  # skill steps and the gate step
    assert "hard score (fraction of tasks solved): 0.000" in asked[0].messages[-1]["content"]
    assert all("At most 3 edits" in r.messages[-1]["content"] for r in proposals)
    assert all(
        r.schema is not None and r.schema["properties"]["edits"]["maxItems"] == 3 for r in proposals
    )


@pytest.mark.parametrize("enabled", [False, True])
def test_the_evolve_phase_starts_only_when_evolution_runs(
    tmp_path: Path, seed_dir: Path, enabled: bool
) -> None:
    """`--no-evolution` never shows `evolve: start` (issue 28 item 9): the phase, its
    validation point and its progress event exist only when a cycle is due."""
    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{"training.epochs": 1, "evolution.enabled": enabled, "credit.c_min": 1},
    )
    trainer = train_run(run, config, bench, sp, seeds, scripted_lm())
    phases = [p.phase for p in trainer.state.val_history]
    assert ("evolve" in phases) is enabled and trainer.state.status == "done"


def test_a_phase_measures_its_starting_pool_beside_its_first_rollouts(
    tmp_path: Path, seed_dir: Path
) -> None:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir, **{"training.epochs": 1})
    lm = TurnTakingLM(responder=respond)
    trainer = train_run(run, config, bench, sp, seeds, lm)
    before_reflecting = lm.seen[: [p for p, _ in lm.seen].index("reflect-skill")]
    # more calls at once than one job's workers (llm.concurrency, and one preparing its next):
    # the measuring's and the first rollout's
    assert max(n for _, n in before_reflecting) > config.llm.concurrency + 1
    # the same run as without the overlap: the starting score first in the history, decisions
    reference, *parts = make_run(tmp_path / "ref", seed_dir, **{"training.epochs": 1})
    plain = train_run(reference, *parts, FakeLM(responder=respond))
    assert trainer.state.val_history == plain.state.val_history
    assert trainer.state.val_history[0].step == 0 and trainer.state.val_history[0].score == 0.0
    assert trainer.pool.digest() == plain.pool.digest()


def test_the_gate_steps_budget_reads_the_gate_phases_starting_score(
    tmp_path: Path, seed_dir: Path
) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"optimizer.schedule": "autonomous"}
    )
    lm = scripted_lm()
    trainer = train_run(run, config, bench, sp, seeds, lm)
    asked = [r.messages[-1]["content"] for r, p in zip(lm.history, lm.purposes, strict=True)]
    budgets = [text for text, p in zip(asked, lm.purposes, strict=True) if p == "budget"]
    history = trainer.state.val_history
    (gate_start,) = [x for x in history if x.phase == "gate" and x.epoch == 0]
    # measured in the background as the gate phase starts, and waited for by its budget
    seen = [f"{x.score:.3f}" for x in history if x.step <= gate_start.step][-5:]
    assert f"Recent history: {', '.join(seen)}\n" in budgets[-1]
