"""The familiarity router inside the training engine (`gating.policy: familiarity | hybrid`).

`FamiliarityExtension` plugs it into the engine (the application layer adds it for those
policies); its `FamiliarityRuntime` gives the engine its routers (`router`), and after each
skill-editing minibatch's rollouts are logged and credited it trains the heads on them and
keeps their JSON as its part of the run state (`NAME`; saved right after by the engine, so a
resumed run continues with the same heads; `stored_router` reads it back).

Two views of the heads, as the engine keeps two views of the statistics:
- the live heads route the minibatch being rolled out, with the exploration bonus;
- validation routes with the heads frozen at the start of the skills phase (the first
  minibatch of the epoch takes the snapshot before it learns), without the bonus, so every
  acceptance decision of the phase compares pools under the same router; in the other phases
  the heads do not change and validation uses them as they are.

Before the first routing the projection's training tasks and the validation split are embedded
in one batched call (`FeatureCache.prefetch`), so a routing reads the cache. The heads are
created on first use: the projection is fitted on the embeddings of (up to `FIT_TASKS` of) the
training tasks, sorted by id, so a run and its resumption fit the same one.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from moscopt.embedding import make_embedder
from moscopt.optimizer.engine.extension import Extension
from moscopt.routing.familiarity import FamiliarityModel, Hyper, LearnStats, Observation
from moscopt.routing.features import FeatureCache
from moscopt.routing.gate import GateStats, Router, constrained_gate
from moscopt.routing.projection import Projection
from moscopt.routing.router import FamiliarityRouter, HybridRouter

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.benchmarks import Task
    from moscopt.config import RouterConfig
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context
    from moscopt.run.migrations import Migration
    from moscopt.run.state import RunState

FIT_TASKS = 512
POLICIES = ("familiarity", "hybrid")
NAME = "familiarity"  # its key in the run state's `extensions`
# MIGRATIONS[i] upgrades the part's version i + 1 to i + 2. Append only.
MIGRATIONS: list[Migration] = []


def stored_router(state: RunState) -> dict[str, Any] | None:
    """The familiarity router's heads, counts and buffer a run state keeps (None: not used)."""
    return state.part(NAME, MIGRATIONS)


def hyper_of(cfg: RouterConfig) -> Hyper:
    return Hyper(
        k_min=cfg.k_min,
        k_max=cfg.k_max,
        theta=cfg.theta,
        tau=cfg.tau,
        margin=cfg.margin,
        lr=cfg.lr,
        exploration=cfg.exploration,
        feature_dim=cfg.feature_dim,
        credit=cfg.credit,
        replay=cfg.replay,
    )


def rolling_out(ctx: Context) -> bool:
    """Whether the engine is rolling out a skill-editing minibatch (the only routing that
    trains and explores): the skills phase, a minibatch started and not yet credited.
    Validation runs at a phase start (no minibatch started) or after the credit."""
    c = ctx.cursor
    return c.phase == "skills" and not c.credited and c.batch_start is not None


class FamiliarityRuntime:
    """Routers and online training of the familiarity estimator for one training process."""

    def __init__(self, ctx: Context, data: dict[str, Any] | None = None) -> None:
        """`data`: the heads as saved (`to_json`), None for new ones."""
        self.ctx = ctx
        cfg = ctx.config.router
        self.hyper = hyper_of(cfg)
        # a run keeps the boilerplate its heads were trained without (none before it was saved)
        boilerplate = data.get("boilerplate", []) if data else [ctx.benchmark.answer_instructions]
        self.features = FeatureCache(make_embedder(cfg.embedding_model), boilerplate)
        self.model: FamiliarityModel | None = None
        self.view: FamiliarityModel | None = None
        self.view_epoch: int | None = None
        self.last: LearnStats | None = None
        self._lock = threading.Lock()
        self._prefetched = False
        if data:
            self.model = FamiliarityModel.from_json(data["model"], self.hyper)
            view = data.get("view")
            if view:
                self.view = FamiliarityModel.from_json(view["heads"], self.hyper)
                self.view_epoch = int(view["epoch"])

    # -- the heads -------------------------------------------------------------------------------

    async def live(self) -> FamiliarityModel:
        if not self._prefetched:  # once per process, a resumed one too
            await self.features.prefetch(t.prompt for t in self.known_tasks())
            self._prefetched = True
        if self.model is None:
            await asyncio.to_thread(self._create)
        assert self.model is not None
        return self.model

    def known_tasks(self) -> list[Task]:
        """The tasks surely routed or read, embedded in one batched call before the first
        routing: the training tasks the projection is fitted on (all of a split of up to
        `FIT_TASKS`) and the validation split (routed at every validation). Other training
        tasks of a larger split are embedded when first routed."""
        splits = self.ctx.splits
        fit = sorted(splits.train, key=lambda t: t.id)[:FIT_TASKS]
        return sorted({t.id: t for t in [*fit, *splits.val]}.values(), key=lambda t: t.id)

    async def frozen(self) -> FamiliarityModel:
        """The heads validation routes with: the skills phase's view while in that phase."""
        ctx = self.ctx
        in_phase = ctx.cursor.phase == "skills" and self.view_epoch == ctx.state.epoch
        if self.view is not None and in_phase:
            return self.view
        return await self.live()

    def _create(self) -> None:
        with self._lock:  # concurrent first routings create the heads once
            if self.model is not None:
                return
            ctx = self.ctx
            tasks = sorted(ctx.splits.train, key=lambda t: t.id)[:FIT_TASKS]
            vectors = [self.features.vector(t.prompt) for t in tasks]
            projection = Projection.fit(vectors, self.hyper.feature_dim)
            self.model = FamiliarityModel(
                projection=projection, seed=ctx.config.seed, hyper=self.hyper, names=ctx.pool.names
            )

    def to_json(self) -> dict[str, Any]:
        assert self.model is not None
        view = None
        if self.view is not None and self.view_epoch is not None:
            view = {"epoch": self.view_epoch, "heads": self.view.heads_json()}
        return {
            "embedding_model": self.features.name,
            "boilerplate": list(self.features.boilerplate),
            "model": self.model.to_json(),
            "view": view,
        }

    # -- the engine's seams ----------------------------------------------------------------------

    def router(self, pool: Pool, stats: GateStats) -> Router:
        """The router for `pool`: live and exploring while a minibatch is rolled out, frozen
        (the phase's view) and greedy for validation."""
        ctx = self.ctx
        live = rolling_out(ctx)
        familiarity = FamiliarityRouter(
            self.live if live else self.frozen, self.features, pool.names, explore=live
        )
        if ctx.config.gating.policy != "hybrid" or pool.gate is None:
            return familiarity
        return HybridRouter(
            familiarity,
            ctx.agent_lm,
            pool,
            min(ctx.config.pool.k, len(pool)),
            stats,
            shortlist=ctx.config.router.shortlist,
            constrained=constrained_gate(ctx.agent_lm.model, ctx.config.gating.output),
        )

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        model = (await self.live()).synced(ctx.pool.names)
        if self.view_epoch != ctx.state.epoch:  # the phase's first minibatch: freeze its view
            self.view, self.view_epoch = model.copy(), ctx.state.epoch
        batch = [Observation(r.task_id, tuple(r.active), float(r.reward)) for r in rollouts]
        keys = sorted({ob.key for ob in (*model.buffer, *batch)} & set(ctx.tasks))
        vectors = await self.features.vectors([ctx.tasks[k].prompt for k in keys])
        self.last = model.learn(batch, dict(zip(keys, vectors, strict=True)))
        self.model = model


class FamiliarityExtension(Extension):
    """The learned router as an engine extension (`gating.policy` familiarity or hybrid): it
    routes the pool and learns from each minibatch's rollouts. Its part of the run state is
    the heads as of the last minibatch learned from (what a resumed run continues with)."""

    name = NAME
    migrations = MIGRATIONS
    runtime: FamiliarityRuntime
    saved: dict[str, Any] | None = None

    def attach(self, ctx: Context, saved: dict[str, Any] | None) -> None:
        self.runtime = FamiliarityRuntime(ctx, saved)
        self.saved = saved

    def saved_state(self) -> dict[str, Any] | None:
        return self.saved

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        await self.runtime.after_rollouts(ctx, rollouts)
        self.saved = self.runtime.to_json()

    def router(self, ctx: Context, pool: Pool, stats: GateStats) -> Router | None:
        return self.runtime.router(pool, stats)

    def start_router(self, ctx: Context, pool: Pool, stats: GateStats) -> Router | None:
        """New heads, as the run started with (they are seeded: the same ones)."""
        return FamiliarityRuntime(ctx, None).router(pool, stats)
