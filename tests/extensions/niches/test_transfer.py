"""CODREAM in the trainer, in the niche world: alpha holds rule A; beta and gamma fail on A
but are strong on B; delta works only on B."""

from __future__ import annotations

from collections import Counter
from typing import Any

from moscopt.extensions.niches.hook import HEADER
from moscopt.extensions.niches.records import live_niches, stored_niches
from moscopt.run.ledger import Dreamed, EditEvent, TransferEvent
from moscopt.run.ledger_read import read_events
from moscopt.testing.niche_world import RULES


def niche_accuracy(run: Any, niche: str, epoch: int) -> float:
    rewards = [
        e.reward
        for e in read_events(run.events.path, kinds={"rollout"})
        if e.epoch == epoch and f"-{niche}" in e.task_id
    ]
    return sum(rewards) / len(rewards)


def test_rule_a_reaches_the_skills_weak_on_a_and_no_other(world_run: Any) -> None:
    w = world_run(transfer=True)
    trainer = w.train()
    pool = trainer.pool
    has_rule = {s.name for s in pool if RULES["A"] in s.body}
    assert has_rule == {"alpha", "beta", "gamma"}  # delta never works on A: never sent it
    routed = [
        e
        for e in read_events(w.run.events.path, kinds={"transfer"})
        if isinstance(e, TransferEvent)
    ]
    a_routes = Counter(
        (e.giver, e.recipient) for e in routed if e.niche == "A" and e.outcome == "routed"
    )
    assert set(a_routes) == {("alpha", "beta"), ("alpha", "gamma")}
    adopted = {(e.giver, e.recipient) for e in routed if e.outcome == "accepted"}
    assert {("alpha", "beta"), ("alpha", "gamma")} <= adopted
    ns = live_niches(trainer.ctx)
    assert ns is not None and ns.adopted["alpha>beta"] == 1 and ns.adopted["alpha>gamma"] == 1
    # the rule entered through validated edits, as any edit does
    rule_edits = [
        e
        for e in read_events(w.run.events.path, kinds={"edit"})
        if isinstance(e, EditEvent) and RULES["A"] in e.summary
    ]
    assert {e.target for e in rule_edits if e.status == "accepted"} == {"beta", "gamma"}
    assert all(e.decision is not None for e in rule_edits if e.status == "accepted")
    assert niche_accuracy(w.run, "A", 2) > niche_accuracy(w.run, "A", 0) + 0.3
    sessions = [
        e for e in read_events(w.run.events.path, kinds={"codream"}) if isinstance(e, Dreamed)
    ]
    assert sessions and all("alpha" not in e.recipients for e in sessions if e.niche == "A")
    assert all("delta" not in e.recipients for e in sessions if e.niche == "A")


def test_without_transfer_nothing_flows_and_niche_a_stays_weak(world_run: Any) -> None:
    w = world_run(transfer=False)
    trainer = w.train()
    assert {s.name for s in trainer.pool if RULES["A"] in s.body} == {"alpha"}
    assert (
        read_events(w.run.events.path, kinds={"transfer"}) == []
        and read_events(w.run.events.path, kinds={"codream"}) == []
    )
    assert not any(p.startswith("codream") for p in w.lm.purposes)
    assert niche_accuracy(w.run, "A", 2) < 0.5
    ns = live_niches(trainer.ctx)
    assert ns is not None and ns.competence["beta"]["A"].count > 0  # competence is still kept


def test_a_routed_insight_is_shown_to_the_next_proposal_then_consumed(world_run: Any) -> None:
    w = world_run(transfer=True, **{"training.epochs": 1})
    trainer = w.train()
    proposals = [
        r.messages[-1]["content"]
        for r, p in zip(w.lm.history, w.lm.purposes, strict=True)
        if p == "propose-skill" and HEADER in r.messages[-1]["content"]
    ]
    assert proposals and all(
        f"from alpha] {RULES['A']}" in p for p in proposals if "name: beta" in p and "niche A" in p
    )
    ns = live_niches(trainer.ctx)
    assert ns is not None
    decided = {
        (e.recipient, e.insight_id)
        for e in read_events(w.run.events.path, kinds={"transfer"})
        if isinstance(e, TransferEvent) and e.outcome != "routed"
    }
    for recipient, insight in decided:
        assert insight not in [r.insight for r in ns.pending.get(recipient, [])]


def test_niches_off_changes_nothing(world_run: Any) -> None:
    w = world_run(transfer=False, **{"niches.enabled": False, "training.epochs": 1})
    trainer = w.train()
    assert live_niches(trainer.ctx) is None and stored_niches(trainer.state) is None
    assert not any(p.startswith("codream") for p in w.lm.purposes)
