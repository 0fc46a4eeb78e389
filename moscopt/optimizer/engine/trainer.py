"""The MOSCOPT engine: three-phase interleaved optimization of a skill pool and its gate.

Per epoch: (1) skill editing on minibatches of training tasks (`skills_phase`), (2) gate editing
on routing failures (`gate_phase`), (3) every E epochs collective evolution, then long-term
memory and the epoch-local buffers are reset (`evolution_phase`). Every change is a candidate
pool that the acceptance policy (`policies.acceptance`) keeps or rejects on the validation split.

Resumability: state is saved after every minibatch, decision and phase, with a `Cursor` that says
what is done and where this epoch's rollouts are in the ledger. Every random choice is a function
of (seed, epoch, task), LLM answers come from the cache, and proposals depend only on what was
saved, so a run killed at any point and resumed makes the decisions an uninterrupted one makes.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from moscopt.optimizer.engine.certificate import certify
from moscopt.optimizer.engine.context import Context, ProgressFn
from moscopt.optimizer.engine.editing import Editor
from moscopt.optimizer.engine.evolution_phase import end_epoch, evolve
from moscopt.optimizer.engine.gate_phase import GatePhase
from moscopt.optimizer.engine.skills_phase import SkillsPhase, batches
from moscopt.optimizer.engine.validation import Validator
from moscopt.run.ledger import Notice, TrainStart
from moscopt.run.state import RunFacts, RunState, ScorePoint, finish_migrations

if TYPE_CHECKING:
    from collections.abc import Sequence

    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.lm.base import LM
    from moscopt.optimizer.engine.extension import Extension
    from moscopt.optimizer.engine.policies import Policies
    from moscopt.run.rundir import RunDir


class Trainer:
    """Runs (or resumes) the optimization stored in a run directory.

    Built by the application layer only (`moscopt.app.workspace.make_trainer`), which chooses
    the `policies` and the `extensions` for the config. `state` is the run's saved state when
    the caller has read it under the run's lock (else it is read); `seeds` is the seed library
    evolution may draw on.
    """

    def __init__(
        self,
        *,
        run: RunDir,
        config: Config,
        benchmark: Benchmark,
        splits: Splits,
        agent_lm: LM,
        optimizer_lm: LM,
        seeds: Pool,
        progress: ProgressFn | None = None,
        state: RunState | None = None,
        policies: Policies,
        extensions: Sequence[Extension] = (),
    ) -> None:
        self.ctx = ctx = Context(
            run=run,
            config=config,
            benchmark=benchmark,
            splits=splits,
            agent_lm=agent_lm,
            optimizer_lm=optimizer_lm,
            seeds=seeds,
            progress=progress,
            state=state,
            extensions=extensions,
        )
        self.validator = Validator(ctx, policies.acceptance)
        self.editor = Editor(ctx, self.validator, policies.budget)
        self.gate = GatePhase(ctx, self.validator, self.editor, policies.restoration)
        self.skills = SkillsPhase(ctx, self.editor, self.gate, policies.targets)

    @property
    def state(self) -> RunState:
        return self.ctx.state

    @property
    def pool(self) -> Pool:
        return self.ctx.pool

    async def start_phase(self, phase: str) -> None:
        """Freeze the gate's view of the statistics for `phase` and start measuring the current
        pool under it, in the background: the phase's first work (roll out, reflect, propose,
        breed) does not depend on the score; every decision, and every save, waits for it
        (`Context.settled`). A run killed before the phase's first save redoes this."""
        ctx = self.ctx
        await ctx.settled()  # the previous phase's score is in
        c = ctx.cursor
        c.phase = phase  # type: ignore[assignment]
        c.batch, c.target, c.credited, c.batch_start = 0, 0, False, None
        c.val_q = {k: round(v, 2) for k, v in ctx.state.q.items()}
        c.val_activations = dict(ctx.state.activations)
        c.best_val = None
        ctx.freeze_validation()  # the memory validation answers with, as the phase starts
        ctx.state.phase = phase
        ctx.emit(event="phase")
        ctx.measure_in_background(self._measure())

    def _measure(self) -> Coroutine[Any, Any, None]:
        """The measuring of the current pool under the phase's view, ready to run beside the
        phase's first work. Its agent is built now: routers and memory are built from the run's
        state as it is when the phase starts, before that work changes it (a rollout under way
        explores, a credited minibatch teaches). Run, it sets `cursor.best_val` and adds the point
        of the validation history where the phase started."""
        ctx, s = self.ctx, self.ctx.state
        where = {"epoch": s.epoch, "step": s.step, "phase": ctx.cursor.phase}
        scoring = self.validator.score_later(ctx.pool)

        async def measure() -> None:
            ctx.cursor.best_val = score = await scoring
            s.val_history.append(ScorePoint(**where, score=score))

        return measure()

    async def train(self) -> RunState:
        try:
            return await self._train()
        finally:
            await self.ctx.stop_measuring()

    async def _train(self) -> RunState:
        ctx, s = self.ctx, self.ctx.state
        ctx.run.rewind_events(s)
        finish_migrations(s, RunFacts(ctx.run.events_path, len(batches(ctx, 0))))
        s.status = "running"
        if ctx.cursor.best_val is None and s.epoch == 0:  # nothing saved since the run began
            checkpoint = ctx.checkpoint(ctx.pool)
            ctx.record(
                TrainStart(pool=ctx.pool.digest()[:12], n=len(ctx.pool), checkpoint=checkpoint)
            )
            self._record_sandbox()
            await self.start_phase("skills")
        while s.epoch < ctx.config.training.epochs:
            phase = ctx.cursor.phase
            if phase == "skills":
                await self.skills.run()
                await self.start_phase("gate")
            elif phase == "gate":
                if ctx.llm_gate and ctx.config.training.interleave:
                    await self.gate.run()
                if self._evolution_due():
                    await self.start_phase("evolve")
                else:  # no evolution this epoch: no "evolve: start" for a phase that does not run
                    await ctx.settled()
                    ctx.cursor.phase = "memory"
                    ctx.save()
            elif phase == "evolve":
                if self._evolution_due():
                    cycle = next((e.evolution for e in ctx.extensions if e.evolution), evolve)
                    await cycle(ctx, self.validator)
                await ctx.settled()
                ctx.cursor.phase = "memory"
                ctx.save()
            elif phase == "memory":
                await ctx.settled()
                await end_epoch(ctx, self.editor)
                if s.epoch < ctx.config.training.epochs:
                    await self.start_phase("skills")
                else:
                    ctx.save()
        await ctx.settled()
        if ctx.config.training.certificate_samples:
            await certify(ctx)  # recorded once per final pool: a resumed run does not pay twice
        s.status = "done"
        s.phase = ctx.cursor.phase = "done"
        ctx.save()
        ctx.emit(event="done")
        return s

    def _evolution_due(self) -> bool:
        cfg, ctx = self.ctx.config.evolution, self.ctx
        return cfg.enabled and not ctx.single and (ctx.state.epoch + 1) % cfg.every == 0

    def _record_sandbox(self) -> None:
        """A `notice` naming what isolates model-written code, when the run executes any."""
        from moscopt.agent.skill_agent import agent_tools

        cfg = self.ctx.config
        tools, _ = agent_tools(cfg.agent.tools, self.ctx.benchmark, cfg.agent.max_steps)
        if cfg.agent.command or not (
            {"python", "shell"} & set(tools) or self.ctx.benchmark.runs_code()
        ):
            return
        from moscopt.agent.tools.sandbox import isolation_notice

        self.ctx.record(
            Notice(kind="sandbox", message=isolation_notice(cfg.agent.allow_unsandboxed))
        )


def initial_state(config: Config, pool: Pool, benchmark: str, splits: Splits) -> RunState:
    return RunState(
        benchmark=benchmark,
        names_used=sorted(pool.names),
        splits={name: [t.id for t in splits[name]] for name in ("train", "val", "test")},
    )
