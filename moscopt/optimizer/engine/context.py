"""`Context`: what every phase of the engine shares — the run, its state and pool, the LMs, the
benchmark, the ledger, validation — and the small helpers they all use.

The context is the one owner of the run's state in memory: phases change `ctx.state` and
`ctx.pool` and call `ctx.save()`; nothing else reads `state.json` while training.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.agent.build import agent_for
from moscopt.agent.harness import Rollout
from moscopt.agent.skill_agent import SkillAgent
from moscopt.config import Config
from moscopt.core.credit import forget, q_of
from moscopt.core.skills import Pool
from moscopt.lm.base import LM
from moscopt.optimizer.policies.error_rate import watch_error_rate
from moscopt.optimizer.similarity import warm
from moscopt.routing.build import make_router, uses_llm_gate
from moscopt.routing.gate import GateStats, Router, constrained_gate
from moscopt.run.ledger import BaseEvent, CallSink, EditEvent, RolloutEvent
from moscopt.run.outcomes import count_outcomes, outcome_counts
from moscopt.run.rundir import RunDir
from moscopt.run.state import Cursor, RunState, ScorePoint, Totals

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits, Task
    from moscopt.optimizer.engine.extension import Extension, Outcome

ProgressFn = Callable[[dict[str, Any]], None]


class Context:
    """The shared working set of one training process."""

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
        extensions: Sequence[Extension] = (),
    ) -> None:
        """`state` is the run's saved state when the caller has read it (else it is read);
        `extensions` are the add-ons plugged in (`engine.extension`), attached in order."""
        self.run = run
        self.config = config
        self.benchmark = benchmark
        self.splits = splits
        self.agent_lm = agent_lm
        self.optimizer_lm = optimizer_lm
        self.seeds = seeds
        self.progress = progress
        self.state: RunState = state if state is not None else run.load_state()
        self.pool: Pool = run.load_pool(self.state)
        self.tasks: dict[str, Task] = {t.id: t for t in splits["all"]}
        self.base_totals = self.state.totals.model_copy()
        n_val = max(1, math.ceil(config.optimizer.p_val * len(splits.val)))
        self.val_tasks: list[Task] = list(splits.val[:n_val])
        self.extensions: list[Extension] = []
        self.activity = ""  # what runs now, in words (the live display's "now" line)
        self.planned_calls: int | None = None  # the plan's calls for this process (its ETA)
        self._measuring: asyncio.Future[None] | None = None  # the phase's starting score
        self._val_view: str | None = None  # the frozen answering state (`freeze_validation`)
        self._val_options: dict[str, Any] = {}
        # the edit decisions as logged (`run.outcomes`), counted for the progress callback
        self.outcomes = (
            outcome_counts(e for e in run.read_events(self.state, {"edit"}) if _is_edit(e))
            if progress is not None
            else count_outcomes(())
        )
        watch_error_rate(self)  # a step whose LLM calls mostly fail stops the run (resumable)
        for extension in extensions:
            self.attach(extension)
        for lm in (agent_lm, optimizer_lm):
            sink = getattr(lm, "events", None)
            if isinstance(sink, CallSink):
                sink.where = self.where
                sink.after = self._called

    # -- modes -----------------------------------------------------------------------------------

    @property
    def cursor(self) -> Cursor:
        return self.state.cursor

    @property
    def single(self) -> bool:
        """N = K = 1: single-skill optimization (SkillOpt); no gate call, no evolution."""
        return len(self.pool) == 1 and self.config.pool.k == 1

    @property
    def llm_gate(self) -> bool:
        """Whether the pool is routed by its (editable) LLM gate."""
        return uses_llm_gate(self.config, self.pool)

    # -- extensions ------------------------------------------------------------------------------

    def attach(self, extension: Extension) -> None:
        saved = self.state.part(extension.name, extension.migrations) if extension.name else None
        extension.attach(self, saved)
        self.extensions.append(extension)

    def extension(self, name: str) -> Extension | None:
        """The attached extension called `name`, if any."""
        return next((e for e in self.extensions if e.name == name), None)

    def agent_options(self) -> dict[str, Any]:
        """The extensions' keyword arguments for the agents the engine builds."""
        options: dict[str, Any] = {}
        for extension in self.extensions:
            options.update(extension.agent_options(self))
        return options

    async def after_rollouts(self, rollouts: Sequence[Rollout]) -> None:
        for extension in self.extensions:
            await extension.after_rollouts(self, rollouts)

    def proposal_evidence(self, name: str) -> tuple[str, tuple[str, ...]]:
        """The extensions' evidence for `name`'s next proposal: (text, ids), text "" if none."""
        blocks: list[str] = []
        ids: list[str] = []
        for extension in self.extensions:
            text, found = extension.proposal_evidence(self, name)
            if text:
                blocks.append(text)
            ids.extend(found)
        return "\n\n".join(blocks), tuple(ids)

    def proposal_decided(self, name: str, ids: tuple[str, ...], outcome: Outcome) -> None:
        for extension in self.extensions:
            extension.proposal_decided(self, name, ids, outcome)

    # -- the score a phase starts from -----------------------------------------------------------

    def measure_in_background(self, measuring: Coroutine[Any, Any, None]) -> None:
        """Run `measuring`, which sets `cursor.best_val` (the score of the pool a phase starts
        from), beside what the phase does first: rolling out, reflecting, proposing and breeding
        do not depend on it. `settled` waits for it."""
        self._measuring = asyncio.ensure_future(measuring)

    async def settled(self) -> None:
        """Wait until the phase's starting score is in. Every decision does, since it compares
        against that pool; a failure to measure it is raised here."""
        if self._measuring is not None:
            await asyncio.shield(self._measuring)

    async def stop_measuring(self) -> None:
        """Cancel a measuring still running (the run stops); its own failure is not raised."""
        measuring, self._measuring = self._measuring, None
        if measuring is None:
            return
        measuring.cancel()
        await asyncio.wait([measuring])
        if not measuring.cancelled():
            measuring.exception()  # retrieved: the run's own error is the one that matters

    # -- routing and agents ----------------------------------------------------------------------

    def router(self, pool: Pool, stats: GateStats, *, start: bool = False) -> Router:
        """The router of `pool` (`start`: as at the start of the run, nothing learned by the
        extensions: `Extension.start_router`)."""
        if not (len(pool) == 1 and self.config.pool.k == 1):
            for extension in self.extensions:
                hook = extension.start_router if start else extension.router
                router = hook(self, pool, stats)
                if router is not None:
                    return router
        return make_router(self.config, pool, self.agent_lm, stats=stats)

    def start_router(self, pool: Pool) -> Router:
        """The router `pool` would have had at the start of the run: no statistics either."""
        return self.router(pool, GateStats(c_min=self.config.credit.c_min), start=True)

    def agent(self, pool: Pool, stats: GateStats) -> SkillAgent:
        return agent_for(
            self.agent_lm,
            self.benchmark,
            pool,
            self.router(pool, stats),
            self.config,
            **self.agent_options(),
        )

    def freeze_validation(self) -> None:
        """Freeze what else changes answers (the extensions' learned state: execution memory,
        routers) for validation, as it is now: every decision of the phase compares incumbent
        and candidate answering with it (`val_agent`)."""
        import copy
        import hashlib
        import json

        self._val_options = copy.deepcopy(self.agent_options())
        learned = {e.name: e.saved_state() for e in self.extensions if e.name}
        text = json.dumps(learned, sort_keys=True, default=str)
        self._val_view = hashlib.sha256(text.encode()).hexdigest()[:16]

    def validation_view(self) -> str:
        """The digest of the answering state validation uses (frozen on first use)."""
        if self._val_view is None:
            self.freeze_validation()
        assert self._val_view is not None
        return self._val_view

    def val_agent(self, pool: Pool) -> SkillAgent:
        """An agent for `pool` as validation sees it: the phase's frozen statistics and
        answering state."""
        self.validation_view()
        return agent_for(
            self.agent_lm,
            self.benchmark,
            pool,
            self.router(pool, self.val_stats()),
            self.config,
            **self._val_options,
        )

    def live_stats(self) -> GateStats:
        return self._stats(self.state.q, self.state.activations)

    def val_stats(self) -> GateStats:
        """The gate's view of the statistics, frozen per phase so validation scores compare."""
        return self._stats(self.cursor.val_q, self.cursor.val_activations)

    def _stats(self, q: dict[str, float], activations: dict[str, int]) -> GateStats:
        return GateStats(
            q=dict(q),
            activations=dict(activations),
            enriched=self.state.epoch >= self.config.gating.enrich_epoch,
            c_min=self.config.credit.c_min,
        )

    # -- ledger and persistence ------------------------------------------------------------------

    def where(self) -> dict[str, Any]:
        return {"epoch": self.state.epoch, "step": self.state.step, "phase": self.cursor.phase}

    def record(self, event: BaseEvent) -> int:
        """Append `event` to the ledger; its byte offset."""
        if isinstance(event, EditEvent):
            self.outcomes[event.status] += 1
        return self.run.events.append(event)

    def rollouts(self, batch_only: bool = False) -> list[RolloutEvent]:
        """This epoch's logged rollouts (or only the current minibatch's), read back by offset."""
        offsets = self.cursor.rollouts
        if batch_only:
            offsets = offsets[len(offsets) - self.cursor.batch_rollouts :]
        events = self.run.events.read_at(offsets)
        return [e for e in events if isinstance(e, RolloutEvent)]

    def checkpoint(self, pool: Pool) -> str:
        """The checkpoint file of `pool` (written now if it is new)."""
        return self.run.write_checkpoint(pool, self.state.step)

    def adopt(self, pool: Pool, score: float) -> str:
        """Make `pool` the current pool after an accepted decision that scored it `score`;
        the checkpoint the decision's event names."""
        checkpoint = self.checkpoint(pool)
        self.pool = pool
        if self.config.evolution.enabled:  # the diversity check's vectors, off its path
            warm(self.config.evolution.embedding_model, pool.names, [x.body for x in pool])
        self.cursor.best_val = score
        s = self.state
        s.val_history.append(
            ScorePoint(epoch=s.epoch, step=s.step, phase=self.cursor.phase, score=score)
        )
        return checkpoint

    def renew(self, old: Pool, new: Pool, born: Iterable[str]) -> None:
        """The statistics after a change of membership: skills gone are forgotten with their
        optimizer state; newborns start from the survivors' mean Q, with no activations."""
        s = self.state
        survivors = [n for n in old.names if n in new.names]
        q_prior = self.config.credit.q_prior
        prior = (
            sum(q_of(s.q, n, q_prior) for n in survivors) / len(survivors) if survivors else q_prior
        )
        for name in set(old.names) - set(new.names):
            forget(s, name)
            s.optimizers.pop(name, None)
        for name in born:
            s.q[name] = prior
            s.activations.pop(name, None)

    def totals(self) -> Totals:
        """The run's counters as of now: the saved ones plus this process's calls so far."""
        totals = self.base_totals.model_copy()
        for lm in dict.fromkeys((self.agent_lm, self.optimizer_lm)):
            stats = getattr(lm, "stats", None)
            if stats is not None:
                totals = _add_totals(totals, stats)
        return totals

    def save(self) -> None:
        """Persist the state (with each extension's part, as it is now) and the pool. Callers
        save after `settled`, so that no saved state lacks its phase's starting score."""
        for extension in self.extensions:
            data = extension.saved_state() if extension.name else None
            if data is not None:
                self.state.keep(extension.name, data, extension.migrations)
        self.state.totals = self.totals()
        self.run.save(self.state, self.pool)

    def doing(self, activity: str) -> None:
        """Say what runs now (`activity`), and tell the progress callback at once."""
        self.activity = activity
        self.emit(event="activity")

    def _called(self) -> None:
        """Each logged LLM call moves the display: its counters agree with the ledger's."""
        self.emit(event="call")

    def emit(self, **fields: Any) -> None:
        """Tell the progress callback (the CLI's live line) what just happened."""
        if self.progress is None:
            return
        s, totals = self.state, self.totals()
        self.progress(
            {
                "epoch": min(s.epoch, self.config.training.epochs - 1),
                "epochs": self.config.training.epochs,
                "step": s.step,
                "phase": self.cursor.phase,
                "best_val": self.cursor.best_val,
                # the ledger's counts, in `run.outcomes`' words (as status and the report)
                **self.outcomes,
                "calls": totals.calls,
                "tokens": totals.prompt_tokens + totals.completion_tokens,
                "cost": totals.cost,
                "activity": self.activity,
                "planned_calls": self.planned_calls,
                "gate_constrained": constrained_gate(
                    self.agent_lm.model, self.config.gating.output
                ),
                # the gate's recent parse-failure rate (the restoration window), None: no data
                "gate_fallback": (
                    sum(s.gate_failure_rates) / len(s.gate_failure_rates)
                    if s.gate_failure_rates
                    else None
                ),
                **fields,
            }
        )


def _is_edit(event: object) -> bool:
    return isinstance(event, EditEvent)


def _add_totals(totals: Totals, stats: Any) -> Totals:
    return Totals(
        calls=totals.calls + int(getattr(stats, "calls", 0)),
        cache_hits=totals.cache_hits + int(getattr(stats, "cache_hits", 0)),
        prompt_tokens=totals.prompt_tokens + int(getattr(stats, "prompt_tokens", 0)),
        completion_tokens=totals.completion_tokens + int(getattr(stats, "completion_tokens", 0)),
        cost=totals.cost + float(getattr(stats, "cost", 0.0)),
    )
