"""Seeded, deterministic train/val/test splitting that does not depend on file order.

Tasks are sorted by id, shuffled with `random.Random(seed)`, and cut test first, then val,
then train: changing the train or val size never moves a task into or out of the test split.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from moscopt.benchmarks.tasks import SPLIT_NAMES, Splits, Task
from moscopt.errors import UserError

_CUT_ORDER = ("test", "val", "train")


def split_tasks(
    tasks: Sequence[Task],
    sizes: Mapping[str, int],
    seed: int,
    *,
    source: str,
    limit: int | None = None,
) -> Splits:
    """Split `tasks` into the requested sizes (scaled down if the data is smaller).

    Raises `UserError` on duplicate ids, on no tasks at all, and when a split that was asked
    for (size > 0) ends up empty.
    """
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise UserError(f"duplicate task id '{t.id}'", path=source)
        seen.add(t.id)
    if not tasks:
        raise UserError("no tasks in the data", path=source)
    wanted = {name: int(sizes.get(name, 0)) for name in SPLIT_NAMES}
    actual, note = _fit(wanted, len(tasks))
    ordered = sorted(tasks, key=lambda t: t.id)
    random.Random(seed).shuffle(ordered)
    parts: dict[str, list[Task]] = {}
    start = 0
    for name in _CUT_ORDER:
        parts[name] = ordered[start : start + actual[name]]
        start += actual[name]
    for name in SPLIT_NAMES:
        if wanted[name] > 0 and not parts[name]:
            raise UserError(
                f"the {name} split is empty: the data has only {len(tasks)} tasks for "
                f"requested sizes {wanted}",
                path=source,
            )
    if limit is not None:
        parts = {name: part[:limit] for name, part in parts.items()}
    return Splits(train=parts["train"], val=parts["val"], test=parts["test"], note=note)


def _fit(wanted: dict[str, int], n: int) -> tuple[dict[str, int], str]:
    """Sizes that fit in `n` items: the requested ones, or proportionally scaled down."""
    total = sum(wanted.values())
    if total <= n:
        return dict(wanted), ""
    scaled = {name: wanted[name] * n // total for name in SPLIT_NAMES}
    rest = n - sum(scaled.values())
    # Hand out the remainder by largest fractional part (ties: test, val, train).
    order = sorted(
        _CUT_ORDER, key=lambda name: -((wanted[name] * n) % total) if wanted[name] else 1
    )
    for name in order:
        if rest == 0:
            break
        if wanted[name] > 0:
            scaled[name] += 1
            rest -= 1
    asked = "/".join(str(wanted[name]) for name in SPLIT_NAMES)
    got = "/".join(str(scaled[name]) for name in SPLIT_NAMES)
    note = (
        f"split sizes scaled down: the data has only {n} tasks for train/val/test {asked}, "
        f"so they are {got} (every row: eval --split all)"
    )
    return scaled, note
