from __future__ import annotations

import threading

import pytest

from moscopt.lm.budget import Budget
from moscopt.lm.errors import BudgetExceeded, LMFatalError


def test_max_calls_counts_reservations_in_flight() -> None:
    budget = Budget(max_calls=2)
    a = budget.reserve()
    b = budget.reserve()
    with pytest.raises(BudgetExceeded, match="max_calls=2"):
        budget.reserve()
    a.cancel()  # never sent: frees its place
    c = budget.reserve()
    b.settle(0.0)
    c.settle(0.0)
    assert budget.calls == 2
    with pytest.raises(BudgetExceeded):
        budget.reserve()


def test_max_cost_refuses_a_call_that_could_pass_it() -> None:
    budget = Budget(max_cost=1.0)
    budget.reserve(0.6).settle(0.5)
    assert budget.cost == 0.5
    with pytest.raises(BudgetExceeded, match="cost budget"):
        budget.reserve(0.6)
    budget.reserve(0.5).settle(0.1)
    assert budget.cost == pytest.approx(0.6)


def test_settling_twice_counts_once_and_usage_can_resume() -> None:
    budget = Budget(max_calls=5, calls=4, cost=1.0)
    r = budget.reserve()
    r.settle(0.1)
    r.settle(0.1)
    assert budget.calls == 5 and budget.cost == pytest.approx(1.1)
    with pytest.raises(BudgetExceeded):
        budget.reserve()


def test_budget_exceeded_is_fatal_for_the_run() -> None:
    assert issubclass(BudgetExceeded, LMFatalError)
    assert BudgetExceeded.exit_code == 1


def test_concurrent_reservations_never_pass_the_limit() -> None:
    budget = Budget(max_calls=50)
    granted: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(20):
            try:
                budget.reserve().settle(0.0)
            except BudgetExceeded:
                return
            with lock:
                granted.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(granted) == 50 == budget.calls
