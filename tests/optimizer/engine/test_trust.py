"""Regression tests of issue 10: each decision of the trainer that was wrong, and the paper's
missing pieces. The world answers by the call's purpose; what it answers depends only on the
skills' text in the request (never on the wording of moscopt's prompts)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Splits
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine import Trainer
from moscopt.optimizer.engine.evolution_phase import evolve
from moscopt.run.ledger import EditEvent, EvolutionEvent
from moscopt.run.ledger_read import read_events
from moscopt.run.state import OptimizerState
from moscopt.testing import FakeLM
from moscopt.testing.scripted import (
    MAGIC,
    VAGUE,
    edit,
    gold_of,
    make_run,
    skill_name,
    splits,
    tasks,
)

FAIL = lambda r: "FINAL ANSWER: 0"  # noqa: E731  (an agent that never solves a task)
LESSON = "- Explicit checks helped; vague advice did not."
MERGED = "- MERGED: the agent never double-checks its final number."


def text(request: LMRequest) -> str:
    return "\n".join(m["content"] for m in request.messages)


def agent(request: LMRequest) -> str:
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    last = request.messages[-1]["content"]
    return f"FINAL ANSWER: {gold_of(last)}" if MAGIC in system else "FINAL ANSWER: 0"


def propose(request: LMRequest) -> str:
    """careful-computation: first the regressing VAGUE edit, then (once VAGUE was rejected and
    is shown) the rule; other skills: an anchor that matches nothing."""
    prompt = text(request)
    if skill_name(prompt) == "careful-computation":
        return edit("", MAGIC if VAGUE in prompt else VAGUE)
    return edit("this anchor does not exist", "x")


def child(request: LMRequest) -> str:
    n = abs(hash(text(request))) % 10_000
    body = f"# Child\n\n1. Plan.\n2. {MAGIC}\n3. Check.\n4. Answer.\n"
    return json.dumps({"name": f"child-{n}", "description": "A derived skill.", "body": body})


ROUTES: dict[str, Any] = {
    "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier",
    "agent": agent,
    "reflect": lambda r: "- The agent never double-checks the final number.",
    "merge": lambda r: MERGED,
    "propose": propose,
    "memory": lambda r: LESSON,
    "budget": lambda r: "L: 3",
    "evolve": child,
}


def world(**routes: Any) -> FakeLM:
    return FakeLM(routes={**ROUTES, **routes})


def run_trainer(tmp_path: Path, seed_dir: Path, lm: FakeLM, sp: Any = None, **cfg: Any) -> Trainer:
    run, config, bench, default_splits, seeds = make_run(tmp_path, seed_dir, **cfg)
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=sp or default_splits,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    return trainer


def calls(lm: FakeLM, purpose: str) -> list[LMRequest]:
    return [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == purpose]


def test_the_edit_budget_decays_over_skill_steps_only(tmp_path: Path, seed_dir: Path) -> None:
    """Regression: gate steps advanced the counter the schedule divides by the skill steps, so
    L reached L_min an epoch early. 2 epochs x 2 skill steps, linear 8 -> 2: 8, 6, 4, 2."""
    lm = world(agent=FAIL)  # failures at every step: every step proposes
    run_trainer(tmp_path, seed_dir, lm, **{"optimizer.schedule": "linear", "gating.edit_steps": 1})
    budgets = [r.schema["properties"]["edits"]["maxItems"] for r in calls(lm, "propose-skill")]
    distinct = [b for i, b in enumerate(budgets) if i == 0 or budgets[i - 1] != b]
    assert distinct == [8, 6, 4, 2]
    gate = [r.schema["properties"]["edits"]["maxItems"] for r in calls(lm, "propose-gate")]
    assert gate[0] == 4  # after the two skill steps of epoch 0


def test_no_rejection_buffer_hides_rejections_from_proposals_only(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: the ablation also dropped rejected edits from long-term memory."""
    lm = world()
    run_trainer(tmp_path, seed_dir, lm, **{"optimizer.rejection_buffer": False})
    assert not any(VAGUE in text(r) for r in calls(lm, "propose-skill"))
    assert any(VAGUE in text(r) for r in calls(lm, "memory"))


def test_no_interleaving_makes_as_many_gate_edits_as_interleaving(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: the ablation edited the gate at every minibatch instead of `edit_steps` per
    epoch; it must change only how edits are validated (together)."""
    counts = {}
    for interleave in (True, False):
        lm = world(agent=FAIL)  # failures every epoch: gate cases exist
        run_trainer(tmp_path / str(interleave), seed_dir, lm, **{"training.interleave": interleave})
        counts[interleave] = len(calls(lm, "propose-gate"))
    assert counts[True] == counts[False] == 2  # one per epoch


def test_reflection_is_hierarchical_and_merged(tmp_path: Path, seed_dir: Path) -> None:
    """A step of 8 failures reflects in groups of M_b = 4 and merges the analyses M_g at a time
    into the one analysis the proposal sees."""
    lm = world(agent=FAIL)
    run_trainer(
        tmp_path, seed_dir, lm, splits(n_train=8),
        **{"optimizer.batch": 8, "optimizer.minibatch": 4, "optimizer.merge_batch": 2,
           "training.epochs": 1, "training.max_steps_per_epoch": 1, "gating.edit_steps": 0},
    )  # fmt: skip
    mine = "name: careful-computation"  # the skill under reflection, as its front matter shows
    reflect = [r for r in calls(lm, "reflect-skill") if mine in text(r)]
    merges = [r for r in calls(lm, "merge-skill") if "`careful-computation`" in text(r)]
    assert len(reflect) == 2 and len(merges) == 1
    proposal = next(r for r in calls(lm, "propose-skill") if mine in text(r))
    assert MERGED in text(proposal)


def test_long_term_memory_reaches_reflection_as_well_as_proposals(
    tmp_path: Path, seed_dir: Path
) -> None:
    lm = world(agent=FAIL)
    run_trainer(tmp_path, seed_dir, lm)
    reflections = calls(lm, "reflect-skill")
    assert not any(LESSON in text(r) for r in reflections[:2])  # epoch 0: nothing learned yet
    assert any(LESSON in text(r) for r in reflections)


def test_reflect_edit_ablation_has_no_buffers_and_no_memory(tmp_path: Path, seed_dir: Path) -> None:
    lm = world()
    trainer = run_trainer(tmp_path, seed_dir, lm, **{"optimizer.method": "reflect_edit"})
    assert not calls(lm, "memory")
    assert not any(VAGUE in text(r) for r in calls(lm, "propose-skill"))  # no rejections shown
    assert all(len(o.step_buffer) <= 1 for o in trainer.state.optimizers.values())


def test_every_accepted_change_beat_its_incumbent_on_the_same_samples(
    tmp_path: Path, seed_dir: Path
) -> None:
    trainer = run_trainer(tmp_path, seed_dir, world(), **{"optimizer.acceptance": "paired"})
    edits = read_events(trainer.ctx.run.events.path, kinds={"edit"})
    accepted = [e for e in edits if isinstance(e, EditEvent) and e.status == "accepted"]
    assert accepted
    for e in accepted:
        assert e.decision is not None and e.decision.policy == "paired"
        assert e.decision.mean_diff > 0 and e.decision.low > 0
        assert e.after is not None and e.before is not None and e.after > e.before


def test_strict_scores_never_decrease_with_repeated_gate_failures(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: restoring the gate mid-phase undid accepted edits and the validation history
    went down (1.0 -> 0.0 at each gate phase)."""

    def flaky_gate(request: LMRequest) -> str:  # unusable on training tasks, fine on validation
        training = re.search(r"Compute 1\d", text(request)) is not None
        return "Je ne sais pas." if training else ROUTES["gate"](request)

    run, config, bench, _, seeds = make_run(
        tmp_path, seed_dir,
        **{"optimizer.acceptance": "strict", "gating.rebuild_window": 1,
           "gating.rebuild_threshold": 0.3, "evolution.enabled": True, "credit.c_min": 1},
    )  # fmt: skip
    # training tasks 11..14 (the gate fails on them), validation tasks 1..4
    sp = Splits(train=tasks("train", 14)[10:], val=tasks("val", 4), test=tasks("test", 2))
    pool = run.load_pool()
    assert pool.gate is not None  # an edited gate, so that restoring the seed gate changes it
    run.save(run.load_state(), pool.replace(pool.gate.with_body(pool.gate.body + "\nEdited.\n")))
    lm = world(gate=flaky_gate)
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    scores = [p.score for p in trainer.state.val_history]
    assert scores == sorted(scores) and scores[-1] == 1.0
    assert read_events(trainer.ctx.run.events.path, kinds={"gate_restored"})


def test_evolution_newborns_start_from_the_mean_q_and_the_eliminated_are_forgotten(
    tmp_path: Path, seed_dir: Path
) -> None:
    """Regression: a newborn's first lucky success set its Q to 1.0, and eliminated skills kept
    their optimizer state (and cost a memory call)."""
    run, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"evolution.enabled": True, "credit.c_min": 1,
                               "optimizer.acceptance": "strict"}
    )  # fmt: skip
    lm = world()
    trainer = make_trainer(
        run=run, config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    s = trainer.state
    s.q = {"careful-computation": 0.9, "cautious-planner": 0.1, "detail-verifier": 0.5}
    s.activations = {"careful-computation": 9, "cautious-planner": 9, "detail-verifier": 9}
    for name in s.q:
        s.optimizers[name] = OptimizerState(long_term_memory=["- a lesson"])

    async def start() -> None:  # the phase's score is measured in its loop
        await trainer.start_phase("evolve")
        await trainer.ctx.settled()

    asyncio.run(start())
    asyncio.run(evolve(trainer.ctx, trainer.validator))
    (event,) = read_events(trainer.ctx.run.events.path, kinds={"evolution"})
    assert isinstance(event, EvolutionEvent) and event.accepted
    born = set(trainer.pool.names) - {"careful-computation", "cautious-planner", "detail-verifier"}
    gone = {"careful-computation", "cautious-planner", "detail-verifier"} - set(trainer.pool.names)
    assert born and gone and len(trainer.pool) == 3  # the pool keeps its size
    survivors = [n for n in ("careful-computation", "cautious-planner", "detail-verifier")
                 if n in trainer.pool.names]  # fmt: skip
    prior = sum({"careful-computation": 0.9, "cautious-planner": 0.1,
                 "detail-verifier": 0.5}[n] for n in survivors) / len(survivors)  # fmt: skip
    assert all(abs(s.q[n] - prior) < 1e-9 and n not in s.activations for n in born)
    assert all(n not in s.optimizers and n not in s.q for n in gone)
    assert born <= set(s.names_used)
