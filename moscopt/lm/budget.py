"""Accounting and hard budgets for LLM calls.

`LMStats` are the running totals of one LM. `Budget` enforces `max_calls` / `max_cost` and may
be shared by several LMs (the agent's and the optimizer's), so that a run's limits hold for the
run. A call reserves its share before it is made (`Budget.reserve`), so concurrent calls can
never together pass a limit; the reservation is settled with the real cost afterwards.

What counts: a *call* is one logical request sent to a provider (retries are counted apart, in
`retries`); cache hits are not calls and cost nothing. The cost reserved for a call is an upper
bound: price of the prompt (at ~3 characters per token) plus `max_tokens` of output.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from moscopt.lm.errors import BudgetExceeded

if TYPE_CHECKING:
    from moscopt.lm.base import LMRequest
    from moscopt.lm.wire import RawAnswer


@dataclass
class LMStats:
    """Running totals of one LM (read them; the LM updates them)."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the provider read from its prompt cache
    cost: float = 0.0
    saving: float = 0.0  # USD the provider's prompt cache saved (cached prompt tokens)
    latency: float = 0.0  # summed seconds of calls made (not of cache hits)

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


class Reservation:
    """One call's claim on a budget; settle it exactly once."""

    def __init__(self, budget: Budget, cost: float) -> None:
        self._budget = budget
        self._cost = cost
        self._open = True

    def settle(self, cost: float, *, made: bool = True) -> None:
        """Record the call (if it was `made`) at its real `cost`; releases the reservation."""
        if self._open:
            self._open = False
            self._budget._settle(self._cost, cost, made)

    def cancel(self) -> None:
        """The call was never sent."""
        self.settle(0.0, made=False)


class Budget:
    """Limits on calls and cost (None: unlimited), with the usage so far.

    `calls`/`cost` can start from earlier usage, so a resumed run keeps its budget.
    """

    def __init__(
        self,
        max_calls: int | None = None,
        max_cost: float | None = None,
        *,
        calls: int = 0,
        cost: float = 0.0,
    ) -> None:
        self.max_calls = max_calls
        self.max_cost = max_cost
        self.calls = calls
        self.cost = cost
        self._reserved_calls = 0
        self._reserved_cost = 0.0
        self._lock = threading.Lock()

    def reserve(self, cost_bound: float = 0.0) -> Reservation:
        """Claim one call costing at most `cost_bound`, or raise `BudgetExceeded`."""
        with self._lock:
            if (
                self.max_calls is not None
                and self.calls + self._reserved_calls + 1 > self.max_calls
            ):
                raise BudgetExceeded(
                    f"call budget reached: {self.calls} of max_calls={self.max_calls} used"
                )
            if self.max_cost is not None and (
                self.cost + self._reserved_cost + cost_bound > self.max_cost
            ):
                raise BudgetExceeded(
                    f"cost budget reached: ${self.cost:.4f} spent, the next call may cost up to "
                    f"${cost_bound:.4f}, max_cost=${self.max_cost:.4f}"
                )
            self._reserved_calls += 1
            self._reserved_cost += cost_bound
        return Reservation(self, cost_bound)

    def _settle(self, reserved: float, cost: float, made: bool) -> None:
        with self._lock:
            self._reserved_calls -= 1
            self._reserved_cost -= reserved
            if made:
                self.calls += 1
                self.cost += cost

    @property
    def limited(self) -> bool:
        return self.max_calls is not None or self.max_cost is not None


def estimated_usage(raw: RawAnswer, request: LMRequest) -> RawAnswer:
    """`raw` with token counts its server did not report believably (see `RawAnswer.usage_valid`)
    estimated as the budget's bound does (~3 characters per token, at most `max_tokens` of
    output), never below what was reported. A server cannot slip a call past `max_cost` by
    reporting nothing or less than 0."""
    chars = sum(len(m["content"]) for m in request.messages)
    return dataclasses.replace(
        raw,
        prompt_tokens=max(raw.prompt_tokens, chars // 3 + 1),
        completion_tokens=max(
            raw.completion_tokens, min(len(raw.text) // 3 + 1, request.max_tokens)
        ),
        cached_tokens=0,
        cost=None,
    )
