"""Whether the `paired` tests can ever act on the configured validation split: the plan's and
`train`'s warning before anything is spent (issue 37, item 6).

The best evidence there is, fed to the tests themselves on the looks a decision takes
(`blocks.look_tasks`, the same schedule as `Validator`): for an edit, a candidate ahead on every
task at every look; for a change that must be non-inferior (evolution, gate restoration, a
lifecycle operator), identical answers on every task. If even that never crosses, no decision
of that kind can ever be accepted on this split, whatever the model does. The task is the unit
(`moscopt.optimizer.policies.blocks`), so what counts is the number of distinct tasks a decision
meets, not the number of samples.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from moscopt.optimizer.policies.blocks import look_size, look_tasks, repeats_from
from moscopt.optimizer.policies.noninferiority import NonInferiorityTest, least_tasks
from moscopt.optimizer.policies.signflip import SequentialSignFlip

if TYPE_CHECKING:
    from moscopt.benchmarks import Splits
    from moscopt.config import Config


# Looks simulated at most: a warning's answer for more looks is that of this many (the plan's
# work must not grow with optimizer.max_val_samples; issue 38, item 9).
MAX_LOOKS = 64


def _schedule(split: int, look: int, looks: int) -> list[list[int]]:
    return [[i for i, _ in look_tasks(split, look, s)] for s in range(looks)]


def can_accept(split: int, look: int, looks: int, confidence: float) -> bool:
    """Whether an edit ahead on every task at every look is ever accepted."""
    looks = min(looks, MAX_LOOKS)
    schedule = _schedule(split, look, looks)
    test = SequentialSignFlip(1.0 - confidence, looks, repeats_from=repeats_from(schedule))
    for keys in schedule:
        outcome = test.look([1.0] * len(keys), keys).outcome
        if outcome != "open":
            return outcome == "crossed"
    return False


def can_keep(split: int, look: int, looks: int, confidence: float, margin: float) -> bool:
    """Whether a change with identical answers on every task is ever kept (non-inferior)."""
    looks = min(looks, MAX_LOOKS)
    schedule = _schedule(split, look, looks)
    test = NonInferiorityTest(1.0 - confidence, margin, looks, repeats_from=repeats_from(schedule))
    for keys in schedule:
        outcome = test.look([0.0] * len(keys), keys).outcome
        if outcome != "open":
            return outcome == "crossed"
    return False


def feasibility_notes(
    split: int, look: int, looks: int, confidence: float, margin: float
) -> list[str]:
    """What can never happen on this split, in words (none: both kinds of decision can act)."""
    out: list[str] = []
    where = f"{split} validation task(s), {look} per look, up to {looks} look(s)"
    if not can_accept(split, look, looks, confidence):
        out.append(
            f"an edit can never be accepted on {where}: even a candidate ahead on every task "
            f"falls short of {confidence:.0%} (hold out more validation tasks)"
        )
    if not can_keep(split, look, looks, confidence, margin):
        need = least_tasks(margin, (1.0 - confidence) / 2.0)
        out.append(
            f"no evolution cycle, gate restoration or lifecycle change can ever be kept on "
            f"{where}: bounding a loss within optimizer.margin = {margin:g} takes about "
            f"{need:.0f} distinct validation tasks with identical answers on each (raise the "
            "validation split or optimizer.margin)"
        )
    return out


def config_notes(config: Config, splits: Splits) -> list[str]:
    """`feasibility_notes` for a config and its splits, as `train` warns before any call."""
    opt = config.optimizer
    if opt.acceptance != "paired" or not splits.val:
        return []
    split = max(1, math.ceil(opt.p_val * len(splits.val)))
    look = look_size(split, opt.val_look)
    notes = feasibility_notes(split, look, opt.max_val_samples, opt.confidence, opt.margin)
    return [f"warning: {n}" for n in notes]
