"""Edit-budget schedules (EditAdam's "learning rate"): the maximum number of edits L per step.

`constant` keeps L_max; `linear` decays from L_max to L_min over the run; `cosine` anneals
smoothly between them; `autonomous` lets the optimizer LLM choose within [L_min, L_max] from the
current hard and soft scores (`budget` returns None and the caller asks the LLM, then `clamp`s).
"""

from __future__ import annotations

import math
from typing import Literal

Schedule = Literal["constant", "linear", "cosine", "autonomous"]


def budget(schedule: Schedule, step: int, total_steps: int, l_max: int, l_min: int) -> int | None:
    """L for `step` (0-based) of `total_steps`; None for `autonomous`."""
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
