"""Decisions survive a crash in a noisy world (issue 23, item 7).

The scripted world's tasks are interchangeable and its answers ignore the sample index, so a
resumed run that shuffled its minibatches differently, or asked another sample, still made the
same decisions there. Here every answer depends on the prompt, the task and the sample index (a
hash of the three, as sampling at temperature > 0 would), the gate picks skills per task and
sample, and proposals depend on what they are shown: a resumed run makes the uninterrupted run's
decisions only if it replays exactly what was saved. Kill points are chosen by progress (a share
of the reference run's calls), never by wall-clock.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from moscopt.lm.base import LMRequest
from moscopt.run.ledger import CertificateEvent, EditEvent, EvolutionEvent, GateRestored
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.fake_lm import Crash
from moscopt.testing.scripted import MAGIC, ROUTES, edit, gold_of, make_run, skill_name, train_run

SEEDS = Path(__file__).resolve().parents[3] / "skills"
OVERRIDES: dict[str, Any] = {
    "evolution.enabled": True,
    # a cycle is kept when its loss is bounded within the margin: on 10 tasks, only a wide one
    "optimizer.margin": 0.6,
    "credit.c_min": 1,
    "training.max_steps_per_epoch": 2,
}
FRACTIONS = (0.04, 0.12, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.97)


def draw(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


def agent(request: LMRequest) -> str:
    msgs = request.messages
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    task = msgs[-1]["content"]
    p = 0.9 if MAGIC in system else 0.3
    if draw("agent", system, task, request.sample) < p:
        return f"FINAL ANSWER: {gold_of(task)}"
    return "FINAL ANSWER: 0"


def gate(request: LMRequest) -> str:
    last = request.messages[-1]["content"]
    ids = sorted(i for i in re.findall(r"^\| ([a-z0-9-]+) \|", last, re.MULTILINE) if i != "id")
    ranked = sorted(ids, key=lambda i: draw("gate", i, last, request.sample))
    return f"ACTIVATE: {', '.join(ranked[:2])}"


def propose(request: LMRequest) -> str:
    last = request.messages[-1]["content"]
    x = draw("propose", last, request.sample)
    if skill_name(last) == "careful-computation" and x < 0.4:
        return edit("", MAGIC)
    return edit("", f"Hint {int(x * 1e6)}: read the question twice.")


def child(request: LMRequest) -> str:
    last = request.messages[-1]["content"]
    x = draw("evolve", last, request.sample)
    rule = MAGIC if x < 0.5 else "Answer quickly."
    body = f"# Child\n\n1. Plan.\n2. Compute.\n3. {rule}\n4. Answer.\n"
    name = f"child-{int(x * 1e6)}"
    return json.dumps({"name": name, "description": "A derived skill.", "body": body})


ROUTES_NOISY = {**ROUTES, "agent": agent, "gate": gate, "propose-skill": propose, "evolve": child}


def decisions(run: RunDir) -> list[tuple[Any, ...]]:
    """Every decision of the run, in order: what it decided on, the verdict and the evidence."""
    out: list[tuple[Any, ...]] = []
    for e in run.read_events(None, {"edit", "evolution", "gate_restored", "certificate"}):
        if isinstance(e, EditEvent):
            d = e.decision
            evidence = None if d is None else (d.samples, d.n, d.mean_diff, d.low, d.high)
            out.append(("edit", e.step, e.target, e.status, e.before, e.after, evidence))
        elif isinstance(e, EvolutionEvent | GateRestored):
            d = e.decision
            evidence = None if d is None else (d.samples, d.n, d.mean_diff, d.low, d.high)
            out.append((e.type, e.step, e.pool, e.accepted, e.before, e.after, evidence))
        elif isinstance(e, CertificateEvent):
            out.append(("certificate", e.verdict, e.final_pool, e.mean_diff))
    return out


def noisy(crash_at: int = 0) -> FakeLM:
    """The noisy world; raises `Crash` on call number `crash_at` (0: never)."""
    return FakeLM(routes=ROUTES_NOISY, crash_at=crash_at)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, int]:
    root = tmp_path_factory.mktemp("noisy-ref")
    run, config, bench, sp, seeds = make_run(root, SEEDS, val_tasks=10, **OVERRIDES)
    lm = noisy()
    train_run(run, config, bench, sp, seeds, lm)
    return run, len(lm.history)


def test_the_noisy_world_makes_varied_decisions(reference: tuple[RunDir, int]) -> None:
    """The world is noisy enough for the resume test to mean something."""
    run, calls = reference
    made = decisions(run)
    verdicts = {d[3] for d in made if d[0] != "certificate"}
    assert {"rejected", True} <= verdicts  # edits rejected, an evolution cycle kept
    assert made[-1][0] == "certificate"
    looks = {d[6][0] for d in made if d[0] != "certificate" and d[6] is not None}
    assert len(looks) >= 3  # decisions stopped after different numbers of sample indices
    assert calls > 500


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_a_killed_and_resumed_run_makes_the_same_decisions(
    tmp_path: Path, reference: tuple[RunDir, int], fraction: float
) -> None:
    ref_run, calls = reference
    run, config, bench, sp, seeds = make_run(tmp_path, SEEDS, val_tasks=10, **OVERRIDES)
    crash_at = max(1, round(fraction * calls))
    with pytest.raises(Crash):
        train_run(run, config, bench, sp, seeds, noisy(crash_at))
    resumed = train_run(RunDir.open(run.path), config, bench, sp, seeds, noisy())
    assert resumed.state.status == "done"
    assert decisions(run) == decisions(ref_run)
    assert run.load_pool() == ref_run.load_pool()
    ref_state = ref_run.load_state()
    assert resumed.state.q == ref_state.q and resumed.state.synergy == ref_state.synergy
