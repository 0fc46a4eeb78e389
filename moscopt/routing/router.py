"""Routers over the familiarity estimator: `FamiliarityRouter` (no LLM call) and
`HybridRouter` (the estimator shortlists, the LLM gate chooses K within the shortlist).

Both follow the `moscopt.routing.gate.Router` contract. `FamiliarityRouter.select` makes no model
call: the task's embedding comes from the `FeatureCache` (computed once per text, in a worker
thread), then the heads and the cutoff take well under a millisecond. Its activation source is
`familiarity`; the hybrid router's is the LLM gate's (`gate`, `fallback`, ...), or `familiarity`
when the shortlist is no longer than K (no call then).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from moscopt.core.skills import Pool
from moscopt.routing.familiarity import FamiliarityModel, Routing
from moscopt.routing.features import FeatureCache
from moscopt.routing.gate import Activation, GateStats, LLMGate

if TYPE_CHECKING:
    from moscopt.lm.base import LM

SOURCE = "familiarity"

# Where a router gets its heads (awaited per routing: the engine creates them on first use).
ModelSource = Callable[[], Awaitable[FamiliarityModel]]


class FamiliarityRouter:
    """Routes by cumulative familiarity (adaptive K); `explore` adds the training bonus."""

    def __init__(
        self,
        model: FamiliarityModel | ModelSource,
        features: FeatureCache,
        names: Sequence[str],
        *,
        explore: bool = False,
    ) -> None:
        if isinstance(model, FamiliarityModel):
            fixed = model

            async def source() -> FamiliarityModel:
                return fixed

            self._source: ModelSource = source
        else:
            self._source = model
        self.features = features
        self.names = tuple(names)
        self.explore = explore

    async def prefetch(self, texts: Iterable[str]) -> None:
        """Embed tasks known ahead in one batched call (in a worker thread)."""
        await self.features.prefetch(texts)

    async def explain(self, task_text: str) -> Routing:
        """The full routing decision: every skill's familiarity and score, and the cutoff."""
        await self._source()  # first: creating the heads prefetches the tasks
        (x,) = await self.features.vectors([task_text])
        # the heads as they are now, used without a pause: a minibatch that learns meanwhile
        # (the engine measures a phase's starting pool beside its first rollouts) changes them
        # in place, never in the middle of a routing
        model = (await self._source()).synced(self.names)
        return model.route(x, explore=self.explore)

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        routing = await self.explain(task_text)
        return Activation(routing.skills, SOURCE)


class HybridRouter:
    """The familiarity router proposes the `shortlist` best-scored skills; the LLM gate picks K
    of them, reading a table of the shortlist only (fewer tokens than the whole pool)."""

    def __init__(
        self,
        familiarity: FamiliarityRouter,
        lm: LM,
        pool: Pool,
        k: int,
        stats: GateStats | None = None,
        *,
        shortlist: int,
        constrained: bool = False,
    ) -> None:
        if pool.gate is None:
            raise ValueError("the hybrid router needs a gating skill")
        self.familiarity = familiarity
        self.lm, self.pool, self.k = lm, pool, k
        self.stats = stats or GateStats()
        self.shortlist = max(k, shortlist)
        self.constrained = constrained

    async def prefetch(self, texts: Iterable[str]) -> None:
        await self.familiarity.prefetch(texts)

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        routing = await self.familiarity.explain(task_text)
        chosen = set(routing.ranked[: self.shortlist])
        if len(chosen) <= self.k:
            return Activation(routing.ranked[: self.k], SOURCE)
        sub = Pool(skills=tuple(s for s in self.pool if s.name in chosen), gate=self.pool.gate)
        gate = LLMGate(self.lm, sub, self.k, self.stats, constrained=self.constrained)
        return replace(await gate.select(task_text, sample=sample), offered=tuple(sub.names))
