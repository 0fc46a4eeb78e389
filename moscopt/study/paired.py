"""Test accuracy and the paired difference between two configurations, with honest intervals.

The unit of observation is one test task under one seed: its reward averaged over the sample
indices evaluated (`--repeats auto` takes 3 to 50). Two configurations are paired on the same
seed, the same task and the same sample indices (the indices both evaluated), so the task's
difficulty and the sampling seed cancel out of the difference.

- Accuracy: the mean over units, with `moscopt.core.stats.mean_ci` over the units (Wilson when every
  unit is 0/1, the normal approximation otherwise).
- Paired difference: the exact sign-flip test of `moscopt.optimizer.policies.acceptance`
  (`SequentialSignFlip` with one look), once per side at (1 - confidence) / 2, so the interval
  is two-sided at `confidence`: `better` iff its low end is above 0, `worse` iff its high end
  is below 0, else `indistinguishable` from noise. Few units cannot be distinguished at all
  (6 units of the same sign give p = 1/32 two-sided), and the interval says so by its width.
  Beyond `EXACT_UNITS` units the test's normal approximation is used (same statistic).

What the interval covers: the evaluation noise of these trained pools on these tasks. Seeds
enter as more units; whether the seeds agree is shown apart (`per_seed`), because three seeds
cannot estimate training noise.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

from moscopt.core import jsonio
from moscopt.core.stats import mean_ci

EXACT_UNITS = 1000
Rows = dict[tuple[str, int], float]  # (task id, sample index) -> reward
Verdict = Literal["better", "worse", "indistinguishable", "identical", "no data"]


def load_rows(path: Path) -> Rows:
    """An evaluation's rows (`moscopt eval --out`): reward per task and sample index."""
    rows: Rows = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = jsonio.loads(line)
                rows[(str(row["task_id"]), int(row.get("sample", 0)))] = float(row["reward"])
    return rows


def units(by_seed: Mapping[int, Rows]) -> dict[tuple[int, str], float]:
    """(seed, task) -> mean reward over that task's sample indices."""
    sums: dict[tuple[int, str], list[float]] = defaultdict(list)
    for seed, rows in by_seed.items():
        for (task, _), reward in rows.items():
            sums[(seed, task)].append(reward)
    return {key: sum(v) / len(v) for key, v in sorted(sums.items())}


@dataclass(frozen=True)
class Accuracy:
    mean: float
    low: float
    high: float
    units: int
    per_seed: dict[int, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "ci95": [self.low, self.high],
            "units": self.units,
            "per_seed": {str(k): v for k, v in self.per_seed.items()},
        }


def accuracy(by_seed: Mapping[int, Rows]) -> Accuracy:
    u = units(by_seed)
    mean, low, high = mean_ci(list(u.values()))
    per_seed: dict[int, list[float]] = defaultdict(list)
    for (seed, _), v in u.items():
        per_seed[seed].append(v)
    return Accuracy(mean, low, high, len(u), {s: sum(v) / len(v) for s, v in per_seed.items()})


@dataclass(frozen=True)
class Difference:
    """candidate - reference, over the paired units."""

    mean: float
    low: float
    high: float
    p_value: float
    units: int
    verdict: Verdict
    per_seed: dict[int, float]

    @property
    def seeds_agreeing(self) -> int:
        """Seeds whose own mean difference has the sign of the overall one (0 if it is 0)."""
        sign = (self.mean > 0) - (self.mean < 0)
        return sum(1 for v in self.per_seed.values() if sign and (v > 0) - (v < 0) == sign)

    def to_json(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "ci95": [self.low, self.high],
            "p_value": self.p_value,
            "units": self.units,
            "verdict": self.verdict,
            "per_seed": {str(k): v for k, v in self.per_seed.items()},
            "seeds_agreeing": self.seeds_agreeing,
        }


def difference(
    candidate: Mapping[int, Rows], reference: Mapping[int, Rows], *, confidence: float = 0.95
) -> Difference:
    """The paired difference candidate - reference (see the module docstring)."""
    diffs: dict[tuple[int, str], float] = {}
    for seed in sorted(set(candidate) & set(reference)):
        cand, ref = candidate[seed], reference[seed]
        by_task: dict[str, list[float]] = defaultdict(list)
        for key in sorted(set(cand) & set(ref)):
            by_task[key[0]].append(cand[key] - ref[key])
        for task, d in by_task.items():
            diffs[(seed, task)] = sum(d) / len(d)
    if not diffs:
        return Difference(0.0, 0.0, 0.0, 1.0, 0, "no data", {})
    values = list(diffs.values())
    per_seed: dict[int, list[float]] = defaultdict(list)
    for (seed, _), v in diffs.items():
        per_seed[seed].append(v)
    seeds = {s: sum(v) / len(v) for s, v in per_seed.items()}
    mean = sum(values) / len(values)
    alpha = (1.0 - confidence) / 2.0
    if all(v == 0 for v in values):
        return Difference(0.0, 0.0, 0.0, 1.0, len(values), "identical", seeds)
    low, high, p_up, p_down = _interval(values, alpha)
    if _unit_rewards(candidate) and _unit_rewards(reference):  # the difference is in [-1, 1]
        low, high = max(low, -1.0), min(high, 1.0)
    verdict: Verdict = "better" if low > 0 else "worse" if high < 0 else "indistinguishable"
    p = min(1.0, 2.0 * min(p_up, p_down))
    return Difference(mean, low, high, p, len(values), verdict, seeds)


def _unit_rewards(by_seed: Mapping[int, Rows]) -> bool:
    return all(0.0 <= r <= 1.0 for rows in by_seed.values() for r in rows.values())


def _interval(values: list[float], alpha: float) -> tuple[float, float, float, float]:
    """(low, high, p of the upper test, p of the lower test)."""
    n = len(values)
    if n <= EXACT_UNITS:
        from moscopt.optimizer.policies.acceptance import SequentialSignFlip

        up = SequentialSignFlip(alpha, 1).look(values)
        down = SequentialSignFlip(alpha, 1).look([-v for v in values])
        return up.mean - up.critical, up.mean + down.critical, up.p_value, down.p_value
    mean = sum(values) / n
    spread = math.sqrt(sum(v * v for v in values)) / n  # the sign-flip null's sd of the mean
    z = NormalDist().inv_cdf(1.0 - alpha)
    p_up = 1.0 - NormalDist().cdf(mean / spread) if spread else 1.0
    return mean - z * spread, mean + z * spread, p_up, 1.0 - p_up
