"""What the configured validation split can detect: the plan's power figure.

The smallest true gain the `paired` acceptance test accepts in at least half of its decisions,
found by running the test itself (`SequentialSignFlip`, the same looks, spending and futility
stops) on simulated decisions: 0/1 rewards, the incumbent at success rate 0.5, the candidate at
0.5 + gain, every (task, sample index) drawn independently (a reworded prompt redraws the
answers). Rewards that agree more between incumbent and candidate (a shared provider seed that
the server honours, tasks that are always or never solved) make the test more powerful than this;
it is a floor a user can act on, and the same simulation for twice the validation tasks says what
more tasks would buy. Graded rewards (partial credit) carry more per call than 0/1 and fresh
tasks more than repeats of the same ones when a model answers consistently: `power_lines` says
which the config uses. Deterministic (a fixed seed). Its work does not grow with
`max_val_samples` (`SIMULATED_LOOKS`) but does with |V|, about as its square (the exact null has
one weight per reachable sum, and each task flips all of them): 0.31 s of CPU at 20 validation
tasks, 0.54 s at 50, 1.6 s at 100, 3.1 s at 200 (the twice-the-tasks figure is half of it), where
the dictionary null took 0.38, 0.90, 3.3 and 7.4 s.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from moscopt.optimizer.policies.blocks import look_tasks, repeats_from
from moscopt.optimizer.policies.signflip import SequentialSignFlip
from moscopt.planning.feasibility import feasibility_notes

GAINS = tuple(round(0.05 * i, 2) for i in range(1, 11))  # +0.05 ... +0.5
TRIALS = 200
BASE = 0.5
# Looks simulated per decision: the configured test (its boundaries for all `max_samples`
# looks), stopped here. A decision still open counts as not accepted, so past this many looks
# the figure is a floor on power, and the plan's work does not grow with max_val_samples.
SIMULATED_LOOKS = 5


def acceptance_rate(
    gain: float,
    tasks: int,
    max_samples: int,
    confidence: float,
    trials: int = TRIALS,
    *,
    pool: int = 0,
) -> float:
    """The share of simulated decisions in which a true `gain` is accepted; `tasks` per look
    drawn from `pool` validation tasks (0: `tasks`), as `Validator` schedules them (a repeated
    task is the same block)."""
    decisions = _decisions(gain, tasks, max_samples, confidence, pool)
    return sum(next(decisions) for _ in range(trials)) / trials


def accepted_half(
    gain: float, tasks: int, max_samples: int, confidence: float, *, pool: int = 0
) -> bool:
    """Whether `acceptance_rate(gain, ...) >= 0.5`, stopping as soon as the trials left cannot
    change the answer (the same answer, in about half the simulated decisions)."""
    need = TRIALS / 2
    accepted = 0
    decisions = _decisions(gain, tasks, max_samples, confidence, pool)
    for done in range(1, TRIALS + 1):
        accepted += next(decisions)
        if accepted >= need or accepted + (TRIALS - done) < need:
            break
    return accepted >= need


def _decisions(
    gain: float, tasks: int, max_samples: int, confidence: float, pool: int
) -> Iterator[bool]:
    """Simulated decisions on a true `gain` (True: accepted), one per `next`, seeded; at most
    `SIMULATED_LOOKS` looks each (the work does not grow with `max_samples`)."""
    rng = random.Random(f"power:{gain}:{tasks}:{max_samples}:{confidence}")
    looks = min(max_samples, SIMULATED_LOOKS)
    schedule = [[i for i, _ in look_tasks(max(pool, tasks), tasks, s)] for s in range(looks)]
    first = repeats_from(schedule)
    while True:
        test = SequentialSignFlip(1.0 - confidence, max_samples, repeats_from=first)
        for keys in schedule:
            diffs = [
                float(rng.random() < BASE + gain) - float(rng.random() < BASE) for _ in range(tasks)
            ]
            look = test.look(diffs, keys)
            if look.outcome != "open":
                break
        yield look.outcome == "crossed"


def detectable_gain(
    tasks: int, max_samples: int, confidence: float, *, pool: int = 0
) -> float | None:
    """The smallest gain of `GAINS` accepted at least half the time (None: not even +0.5)."""
    for gain in GAINS:
        if accepted_half(gain, tasks, max_samples, confidence, pool=pool):
            return gain
    return None


def power_summary(
    tasks: int, max_samples: int, confidence: float, margin: float, *, pool: int = 0
) -> dict[str, Any]:
    """The plan's power figures (`moscopt plan --json`: "power"); `tasks` per look, drawn from
    `pool` held-out validation tasks (0: `tasks`, every look repeats them)."""
    pool = max(pool, tasks)
    here = detectable_gain(tasks, max_samples, confidence, pool=pool)
    more = detectable_gain(2 * tasks, max_samples, confidence, pool=2 * pool)
    return {
        "val_tasks": tasks,
        "val_pool": pool,
        "max_val_samples": max_samples,
        "simulated_looks": min(max_samples, SIMULATED_LOOKS),
        "fresh_looks": min(max_samples, pool // tasks),  # looks on tasks not yet seen
        "detectable_gain": here,  # accepted at least half the time (None: not even +0.5)
        "detectable_gain_with_twice_the_tasks": more,
        "margin": margin,
        "assumes": "0/1 rewards at 0.5, independent draws per task and sample",
        "feasibility": feasibility_notes(pool, tasks, max_samples, confidence, margin),
    }


def power_lines(power: dict[str, Any]) -> list[str]:
    """What `moscopt plan` says about the decisions' power and the non-inferiority margin."""

    def said(gain: float | None) -> str:
        return f"+{gain:.2f}" if gain is not None else "no gain up to +0.5"

    tasks, samples = power["val_tasks"], power["max_val_samples"]
    pool, fresh = power.get("val_pool", tasks), power.get("fresh_looks", 1)
    if pool > tasks:
        draws = (
            f"each look draws {tasks} of the {pool} held-out validation tasks not yet seen "
            f"(optimizer.val_look): {fresh} of the {samples} look(s) see fresh tasks"
        )
    else:
        draws = (
            f"every look repeats the same {tasks} tasks at a new sample index; the tests count "
            "a task once, however many samples of it (a model that answers a task the same way "
            "on most samples makes repeats no new evidence), so more tasks buy more than more "
            "samples: from 40 validation tasks looks draw 20 fresh ones each (optimizer.val_look)"
        )
    simulated = power.get("simulated_looks", samples)
    within = f" within its first {simulated} looks" if simulated < samples else ""
    return [
        f"power: with |V|={tasks} and up to {samples} sample(s) per decision, an edit is accepted "
        f"at least half the time{within} from a true gain of {said(power['detectable_gain'])} "
        f"(0/1 rewards, independent draws; graded rewards find smaller gains); {2 * tasks} "
        f"validation tasks per look: {said(power['detectable_gain_with_twice_the_tasks'])}",
        f"evidence: {draws}",
        "evolution, gate restoration and lifecycle changes are kept only when the evidence bounds "
        f"their loss within optimizer.margin = {power['margin']:g} (non-inferiority: identical "
        "answers on about 40 distinct tasks at 0.1)",
        *(f"feasibility: {note}" for note in power.get("feasibility", [])),
    ]
