"""`Extension`: the one way an add-on (the familiarity router, niches and insight transfer, gated
execution memory) plugs into the engine. The engine imports none of them: the application layer
(`moscopt.app.extensions`) builds the list for a config and hands it to the `Trainer`.

Each add-on owns its part of the run state: `name` is its key in `RunState.extensions` ("":
it keeps none), saved at version `len(migrations) + 1`; an older part is upgraded by its own
named `migrations` (`moscopt.run.migrations`) before `attach` sees it. The engine knows none of
its fields.

Every hook is optional (the base class does nothing), is called in the order the extensions were
given, and may raise only `LMFatalError`:
- `attach(ctx, saved)`: once, when the context is built; `saved` is its part (None: none yet);
- `saved_state()`: its part as JSON (None: nothing to keep yet), read at every save;
- `agent_options(ctx)`: keyword arguments for the agents the engine builds (`agent_for`);
- `after_rollouts(ctx, rollouts)`: after each skill-editing minibatch is logged and credited,
  before the state is saved, so what it learns survives a resume;
- `router(ctx, pool, stats)`: a router for the pool, or None to leave routing to the gate;
- `start_router(ctx, pool, stats)`: the router it gave at the start of the run, before it learned
  anything (the certificate routes the starting pool with it); None to leave it to the gate;
- `proposal_evidence(ctx, name)`: a block of text added to the analysis a target's proposal
  sees, and ids that `proposal_decided` receives back; read-only, so a resumed run sees the same;
- `proposal_decided(ctx, name, ids, outcome)`: the decision on that proposal (`Outcome`);
- `evolution`: a cycle that replaces the collective evolution cycle (at most one extension).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context
    from moscopt.optimizer.engine.validation import Validator
    from moscopt.routing.gate import GateStats, Router
    from moscopt.run.migrations import Migration

# what became of a proposal: kept, validated and refused, applied nothing, or no usable proposal
Outcome = Literal["accepted", "rejected", "not_applied", "unusable"]
EvolutionCycle = Callable[["Context", "Validator"], Awaitable[None]]


class Extension:
    """An add-on's hooks into the engine (module docstring); subclasses override what they use."""

    name: ClassVar[str] = ""
    migrations: ClassVar[Sequence[Migration]] = ()
    evolution: EvolutionCycle | None = None

    def attach(self, ctx: Context, saved: dict[str, Any] | None) -> None:
        return None

    def saved_state(self) -> dict[str, Any] | None:
        return None

    def agent_options(self, ctx: Context) -> dict[str, Any]:
        return {}

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        return None

    def router(self, ctx: Context, pool: Pool, stats: GateStats) -> Router | None:
        return None

    def start_router(self, ctx: Context, pool: Pool, stats: GateStats) -> Router | None:
        return None

    def proposal_evidence(self, ctx: Context, name: str) -> tuple[str, tuple[str, ...]]:
        return "", ()

    def proposal_decided(
        self, ctx: Context, name: str, ids: tuple[str, ...], outcome: Outcome
    ) -> None:
        return None
