"""The time a run has left, from the pace of its calls (`moscopt.app.pace`): the panel's and a
background run's status's estimate before an epoch has been timed."""

from __future__ import annotations

import pytest

from moscopt.app.pace import MIN_CALLS_FOR_ETA, left_by_calls


def test_the_calls_left_at_the_pace_so_far() -> None:
    # 10 calls in 20 s since this process first saw call 5 (of a resumed run: the 100 planned
    # are this process's): 2 s a call, 90 calls left
    assert left_by_calls(100, (100.0, 5), 15, 120.0) == pytest.approx(180.0)


@pytest.mark.parametrize(
    ("planned", "first", "calls", "reason"),
    [
        (None, (0.0, 0), 10, "-"),
        (100, None, 10, "-"),
        (100, (0.0, 0), None, "-"),
        (100, (0.0, 3), 3 + MIN_CALLS_FOR_ETA - 1, "after 5 calls; about 100 planned"),
        (100, (0.0, 0), 100, "past the plan's 100 calls"),
    ],
)
def test_no_estimate_says_why(
    planned: int | None, first: tuple[float, int] | None, calls: int | None, reason: str
) -> None:
    found = left_by_calls(planned, first, calls, 50.0)
    assert isinstance(found, str) and reason in found
