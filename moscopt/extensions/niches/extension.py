"""The niches extension: niche competence and CODREAM transfer after each minibatch
(`observer`), routed insights as proposal evidence (`hook`), and, with
`evolution.policy: lifecycle`, the fork/merge/prune/seed cycle in place of collective evolution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.extensions.niches.hook import decided, pending_evidence
from moscopt.extensions.niches.lifecycle_apply import lifecycle_cycle
from moscopt.extensions.niches.observer import NicheObserver
from moscopt.extensions.niches.records import HoldsNiches
from moscopt.optimizer.engine.extension import Outcome

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.config import Config
    from moscopt.optimizer.engine.context import Context


class NichesExtension(HoldsNiches):
    """Its part of the run state is the `NicheState` (`records.HoldsNiches`). `show_gold`:
    whether CODREAM sees a failure's expected answer (a stream sees only the reward)."""

    def __init__(self, config: Config, *, show_gold: bool = True) -> None:
        self.observer = NicheObserver(config, show_gold=show_gold)
        if config.evolution.policy == "lifecycle":
            self.evolution = lifecycle_cycle

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        await self.observer.after_rollouts(ctx, rollouts)

    def proposal_evidence(self, ctx: Context, name: str) -> tuple[str, tuple[str, ...]]:
        return pending_evidence(ctx, name)

    def proposal_decided(
        self, ctx: Context, name: str, ids: tuple[str, ...], outcome: Outcome
    ) -> None:
        decided(ctx, name, ids, outcome)


def wanted(config: Config) -> bool:
    """Whether `config` uses niches (transfer, competence, or the lifecycle that needs them)."""
    return config.niches.active or config.evolution.policy == "lifecycle"
