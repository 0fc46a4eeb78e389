"""The familiarity router inside the trainer: it routes every rollout with no LLM call, learns
after each minibatch, explores only while rolling out, and resumes to the same heads.

The world (`moscopt.testing.router_world.NicheWorld`): offline-benchmark tasks of six families,
each solved only when its specialist skill is active; edits never apply (their anchor matches
nothing), so the pool stays fixed and what changes is the router.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.routing import engine as routing_engine
from moscopt.routing.gate import schema_ids
from moscopt.routing.router import FamiliarityRouter
from moscopt.run.ledger_read import read_events
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import Crash, crash_on_call
from moscopt.testing.router_world import (
    gate_learning_routes,
    make_router_run,
    route_rule,
    trainer_routes,
)
from moscopt.testing.scripted import train_run


class Recorder(FamiliarityRouter):
    built: ClassVar[list[bool]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        Recorder.built.append(self.explore)


def test_familiarity_policy_routes_with_no_llm_call_and_explores_only_rolling_out(
    tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing_engine, "FamiliarityRouter", Recorder)
    Recorder.built = []
    run, config, bench, sp, seeds, world = make_router_run(tmp_path, seed_dir)
    lm = FakeLM(routes=trainer_routes(world))
    trainer = train_run(run, config, bench, sp, seeds, lm)
    state = trainer.state
    assert state.status == "done" and "gate" not in lm.purposes
    rollouts = read_events(run.events.path, kinds={"rollout"})
    assert rollouts and {e.activation for e in rollouts} == {"familiarity"}
    assert all(1 <= len(e.skills) <= 3 for e in rollouts)  # k_min .. k_max
    # one exploring router per minibatch (6 per epoch), every validation greedy
    assert Recorder.built.count(True) == 12
    assert Recorder.built.count(False) == len(read_events(run.events.path, kinds={"validation"}))
    # the heads were trained and saved; every skill was tried
    saved = routing_engine.stored_router(run.load_state())
    assert saved is not None and saved["embedding_model"] == "hashing-256"
    assert saved["model"]["routed"] == len(rollouts)
    assert set(saved["model"]["allocated"]) == set(trainer.pool.names)
    assert saved["view"]["epoch"] == 1


@pytest.mark.parametrize("crash_at", [5, 23, 40])
def test_an_interrupted_run_resumes_to_the_same_heads(
    tmp_path: Path, seed_dir: Path, crash_at: int
) -> None:
    ref, config, bench, sp, seeds, world = make_router_run(tmp_path / "ref", seed_dir)
    train_run(ref, config, bench, sp, seeds, FakeLM(routes=trainer_routes(world)))
    reference = routing_engine.stored_router(ref.load_state())

    run, config, bench, sp, seeds, world = make_router_run(tmp_path / "crash", seed_dir)
    crashing = crash_on_call(crash_at, world.respond)

    with pytest.raises(Crash):
        train_run(
            run,
            config,
            bench,
            sp,
            seeds,
            FakeLM(routes={**trainer_routes(world), "agent": crashing}),
        )
    resumed = train_run(run, config, bench, sp, seeds, FakeLM(routes=trainer_routes(world)))
    assert resumed.state.status == "done"
    assert routing_engine.stored_router(run.load_state()) == reference
    assert len(read_events(run.events.path, kinds={"rollout"})) == len(
        read_events(ref.events.path, kinds={"rollout"})
    )


def test_hybrid_policy_asks_the_gate_to_choose_within_the_shortlist(
    tmp_path: Path, seed_dir: Path
) -> None:
    run, config, bench, sp, seeds, world = make_router_run(
        tmp_path, seed_dir, **{"gating.policy": "hybrid", "router.shortlist": 3}
    )
    lm = FakeLM(routes=trainer_routes(world))
    train_run(run, config, bench, sp, seeds, lm)
    gates = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "gate"]
    assert gates and all(len(schema_ids(r.schema)[0]) == 3 for r in gates if r.schema)
    assert {e.activation for e in read_events(run.events.path, kinds={"rollout"})} <= {
        "gate",
        "partial",
        "fallback",
    }
    assert all(len(e.skills) == 2 for e in read_events(run.events.path, kinds={"rollout"}))


class BatchCounter(HashingEmbedder):
    """The hashing embedder, counting the texts of each batched call."""

    batches: ClassVar[list[int]] = []

    def encode_many(self, texts: Sequence[str]) -> list[Any]:
        BatchCounter.batches.append(len(texts))
        return super().encode_many(texts)


def test_the_trainer_embeds_its_tasks_in_one_batch_before_routing(
    tmp_path: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing_engine, "make_embedder", lambda name: BatchCounter())
    BatchCounter.batches = []
    run, config, bench, sp, seeds, world = make_router_run(tmp_path, seed_dir)
    train_run(run, config, bench, sp, seeds, FakeLM(routes=trainer_routes(world)))
    known = {t.id for t in [*sp.train, *sp.val]}
    assert BatchCounter.batches == [len(known)]  # every later routing read the cache


@pytest.mark.parametrize("edit_steps", [2, 0])
def test_hybrid_training_edits_the_gate_on_cases_of_its_shortlist(
    tmp_path: Path, seed_dir: Path, edit_steps: int
) -> None:
    """The hybrid gate is an editable LLM gate: its routing cases name the shortlist it chose
    from, and count as left out only skills it was offered; the world's gate optimizer learns a
    routing rule from them, and a rule that helps on validation is kept."""
    run, config, bench, sp, seeds, world = make_router_run(
        tmp_path,
        seed_dir,
        val=72,  # a rule helps its family: twelve validation tasks of each
        **{
            "gating.policy": "hybrid",
            "router.shortlist": 3,
            "pool.k": 1,
            "gating.edit_steps": edit_steps,
        },
    )
    world.gate_accuracy = 0.3
    lm = FakeLM(routes=gate_learning_routes(world))
    trainer = train_run(run, config, bench, sp, seeds, lm)
    rollouts = read_events(run.events.path, kinds={"rollout"})
    gated = [e for e in rollouts if e.activation == "gate"]
    assert gated and all(len(e.offered) == 3 and set(e.skills) <= set(e.offered) for e in gated)
    reflections = [r for r, p in zip(lm.history, lm.purposes, strict=True) if p == "reflect-gate"]
    gate = trainer.pool.gate
    assert gate is not None
    rules = [f for f in world.families if route_rule(f) in gate.body]
    if edit_steps == 0:
        assert not reflections and not rules
        return
    assert reflections
    prompt = str(reflections[0].messages[-1]["content"])
    assert "offered to the gate (the router's shortlist):" in prompt
    for case in prompt.split("\n- task: ")[1:]:
        offered = case.split("shortlist): ")[1].split("\n")[0].split(", ")
        left_out = case.split("left out: ")[1].split("\n")[0] if "left out: " in case else ""
        assert all(s.split(" (")[0] in offered for s in left_out.split(", ") if s)
    edits = [e for e in read_events(run.events.path, kinds={"edit"}) if e.target == "gate"]
    # learned, validated and kept: on 72 validation tasks the per-task test (issue 37) can tell
    # a rule's gain on its family's twelve (on 36, six each, it could not: none was kept)
    accepted = [e for e in edits if e.status == "accepted"]
    assert accepted and all(e.after > e.before for e in accepted)  # type: ignore[operator]
    assert rules
