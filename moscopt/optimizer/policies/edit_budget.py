"""The edit budget (EditAdam's "learning rate"): the maximum number of edits L of one step.

Schedules are defined over *skill-editing* steps only (gate steps do not advance them), so the
last epoch is not spent at L_min early: `constant` keeps L_max; `linear` decays from L_max to L_min
over the run's skill steps; `cosine` anneals smoothly between them; `autonomous` lets the
optimizer LLM choose within [L_min, L_max] from the current minibatch's hard score (fraction
solved) and soft score (mean reward) — `EditBudget.fixed` returns None and the caller asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Schedule = Literal["constant", "linear", "cosine", "autonomous"]


def budget(schedule: Schedule, step: int, total_steps: int, l_max: int, l_min: int) -> int | None:
    """L for skill step `step` (0-based) of `total_steps`; None for `autonomous`."""
    if schedule == "autonomous":
        return None
    if schedule == "constant" or total_steps <= 1:
        return l_max
    frac = min(max(step / (total_steps - 1), 0.0), 1.0)
    if schedule == "linear":
        value = l_max - (l_max - l_min) * frac
    elif schedule == "cosine":
        value = l_min + (l_max - l_min) * 0.5 * (1 + math.cos(math.pi * frac))
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    return clamp(round(value), l_max, l_min)


def clamp(value: int, l_max: int, l_min: int) -> int:
    return max(l_min, min(l_max, value))


@dataclass(frozen=True)
class EditBudget:
    """The schedule of one run: `total_steps` skill-editing steps in all."""

    schedule: Schedule
    l_max: int
    l_min: int
    total_steps: int

    def fixed(self, skill_step: int) -> int | None:
        """L for the `skill_step`-th skill-editing step; None: ask the optimizer (autonomous)."""
        return budget(self.schedule, skill_step, self.total_steps, self.l_max, self.l_min)

    def clamp(self, value: int) -> int:
        return clamp(value, self.l_max, self.l_min)
