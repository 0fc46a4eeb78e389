"""The time a run has left, from the pace of its calls so far and the plan's call count: what
the terminal's panel (`moscopt.cli.display`) and a background run's status
(`moscopt.app.background`) show before a whole epoch has been timed."""

from __future__ import annotations

MIN_CALLS_FOR_ETA = 5  # calls made before the pace is trusted


def left_by_calls(
    planned: int | None, first: tuple[float, int] | None, calls: int | None, now: float
) -> float | str:
    """Seconds left (an upper estimate: the plan counts every call a run may make), or the
    reason there is no estimate yet. `planned`: the calls the plan gives this process (a resumed
    run's are what is left); `first`: the clock and the run's call count when this process first
    saw it; `calls`: the count now."""
    if not planned or first is None or calls is None:
        return "-"
    since, calls0 = first
    made = calls - calls0
    if made < MIN_CALLS_FOR_ETA:
        return f"- (after {MIN_CALLS_FOR_ETA} calls; about {planned} planned)"
    if made >= planned:
        return f"- (past the plan's {planned} calls)"
    return (planned - made) * (now - since) / made
