"""When the gate is restored, and to what.

The gate's parse failures (answers that name no usable skill, over the gate's answers; see
`gating.count_parse_failures` — an LLM error at the gate is not the gate's fault and counts in
neither) are tracked per skill-editing step, over every selection of its rollouts. When the
failure rate exceeds `threshold` in each of the last `window`
steps, a restoration is due: the candidate gate is the last gate whose step stayed within the
threshold, or the seed gate if there never was one (the paper re-initialises G). The engine
validates the candidate like any other and keeps it only if it is non-inferior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from moscopt.routing.gate import count_parse_failures


@dataclass
class GateRestoration:
    threshold: float
    window: int
    history: list[float] = field(default_factory=list)  # recent failure rates, oldest first

    @staticmethod
    def rate(sources: Sequence[str]) -> float | None:
        """Parse failures over gate answers; None when the gate never answered."""
        failures, answers = count_parse_failures(sources)
        return failures / answers if answers else None

    def healthy(self, sources: Sequence[str]) -> bool:
        """Whether a step with these activation sources leaves the gate in good standing."""
        rate = self.rate(sources)
        return rate is not None and rate <= self.threshold

    def observe(self, sources: Sequence[str]) -> bool:
        """Record one step's sources; True when a restoration is due (the window restarts)."""
        rate = self.rate(sources)
        if rate is None:
            return False
        self.history.append(rate)
        del self.history[: -self.window]
        if len(self.history) == self.window and all(r > self.threshold for r in self.history):
            self.history.clear()
            return True
        return False
