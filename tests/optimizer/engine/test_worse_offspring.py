"""A run never hands back a worse pool: evolution in a world where every new skill is worse.

Every offspring makes the agent 0.2 less likely to succeed (0.5 -> 0.3) whenever it is active,
every answer is drawn from a hash of (prompt, task, sample index), and edits never help. The old
"not worse" test kept such cycles about half the time on 10 validation tasks (13 of 30 in the
issue's measurement); the non-inferiority test keeps a pool worse by more than the margin in at
most 5% of decisions, so over these cycles none is kept and the pool's validation score holds.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from moscopt.lm.base import LMRequest
from moscopt.run.ledger import EvolutionEvent
from moscopt.testing import FakeLM
from moscopt.testing.scripted import ROUTES, edit, gold_of, make_run, train_run

SEEDS = Path(__file__).resolve().parents[3] / "skills"
WORSE = "Answer at once, without checking."


def draw(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


def agent(request: LMRequest) -> str:
    msgs = request.messages
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    task = msgs[-1]["content"]
    p = 0.3 if WORSE in system else 0.5
    ok = draw(system, task, request.sample) < p
    return f"FINAL ANSWER: {gold_of(task) if ok else 0}"


def child(request: LMRequest) -> str:
    x = draw(request.messages[-1]["content"], request.sample)
    body = f"# Child\n\n1. Read.\n2. {WORSE}\n3. Stop.\n4. Variant {int(x * 1e6)}.\n"
    return json.dumps({"name": f"child-{int(x * 1e6)}", "description": "d", "body": body})


def gate(request: LMRequest) -> str:  # offspring are always routed to when present
    last = request.messages[-1]["content"]
    ids = [line.split("|")[1].strip() for line in last.splitlines() if line.startswith("| ")]
    ids = [i for i in ids if i and i != "id"]
    kids = [i for i in ids if i.startswith("child-")]
    return f"ACTIVATE: {', '.join((kids + [i for i in ids if i not in kids])[:2])}"


def test_evolution_never_keeps_offspring_that_are_truly_worse(
    tmp_path: Path,
) -> None:
    routes: dict[str, Any] = {
        **ROUTES,
        "agent": agent,
        "gate": gate,
        "evolve": child,
        "propose-skill": lambda r: edit("this anchor does not exist", "x"),  # no edit applies
    }
    overrides = {
        "evolution.enabled": True,
        "credit.c_min": 1,
        "training.epochs": 8,
        "training.max_steps_per_epoch": 1,
        "evolution.diversity_threshold": 1.0,
        "training.certificate_samples": 0,
    }
    run, config, bench, sp, seeds = make_run(tmp_path, SEEDS, val_tasks=10, **overrides)
    trainer = train_run(run, config, bench, sp, seeds, FakeLM(routes=routes))
    cycles = [e for e in run.read_events(None, {"evolution"}) if isinstance(e, EvolutionEvent)]
    decided = [e for e in cycles if e.decision is not None]
    # mutation's turns make a worse candidate; crossover's turns (odd cycles) find no skill to
    # eliminate in this 3-skill pool, whose routed pair are the parents
    assert len(decided) >= 3
    assert [e.accepted for e in decided] == [False] * len(decided)
    assert all(e.decision.reason.startswith(("behind", "cap")) for e in decided)  # type: ignore[union-attr]
    assert not any(n.startswith("child-") for n in trainer.pool.names)
    history = trainer.state.val_history
    assert history[-1].score == history[0].score  # the pool never changed
