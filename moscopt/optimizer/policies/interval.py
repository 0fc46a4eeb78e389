"""A confidence interval for the mean of bounded differences, by betting: the certificate's
(`moscopt.optimizer.engine.certificate`), over one difference per task.

For each candidate mean m, a bettor stakes on the differences (in order, each stake chosen from
the differences before it, as in `noninferiority.wealths`, centred at m) against H0: mean <= m,
and another against H0: mean >= m; m is outside the interval when either's wealth reaches
2 / alpha at some point (Ville's inequality: each side errs with probability at most alpha / 2,
whatever the distribution of the differences within [-1, 1], ties included). So the interval
covers the mean of the tasks the differences were drawn from in at least 1 - alpha of the
splits, and is never of zero width: n tasks that all tie still leave a loss or a gain the n
tasks cannot rule out.
"""

from __future__ import annotations

from collections.abc import Sequence

from moscopt.optimizer.policies.noninferiority import wealths

STEPS = 40


def _rejects_below(ds: Sequence[float], m: float, level: float) -> bool:
    """Whether the evidence rejects H0: mean <= m at `level`."""
    if m >= 1.0:
        return False
    if m <= -1.0:
        return True
    return max(wealths(ds, m, m)) * level >= 1.0


def lower(ds: Sequence[float], level: float) -> float:
    """The largest m in [-1, 1] whose H0: mean <= m is rejected at `level` (-1: none)."""
    if not ds or not _rejects_below(ds, -1.0 + 1e-9, level):
        return -1.0
    low, high = -1.0 + 1e-9, 1.0
    for _ in range(STEPS):
        mid = (low + high) / 2.0
        low, high = (mid, high) if _rejects_below(ds, mid, level) else (low, mid)
    return low


def mean_interval(ds: Sequence[float], alpha: float) -> tuple[float, float]:
    """The two-sided (1 - alpha) interval for the mean of `ds` (each within [-1, 1])."""
    low = lower(ds, alpha / 2.0)
    high = -lower([-d for d in ds], alpha / 2.0)
    return low, high


def p_value(ds: Sequence[float]) -> float:
    """The two-sided p-value of "no difference on average" (mean = 0), by the same bets."""
    if not ds:
        return 1.0
    up = max(wealths(ds, 0.0, 0.0))
    down = max(wealths([-d for d in ds], 0.0, 0.0))
    return min(1.0, 2.0 / max(up, down))
