"""The pilot: one real minibatch of training rollouts (and, by default, one reflect/propose
for each target it implicates) against the configured models, measured from its `llm_call`
events.

The pilot is the run's own first step: a throwaway run directory (under the system's temporary
folder), the same seeds, the same first minibatch, the same prompts, through the project's
response cache. So when `moscopt train` follows, its first minibatch and first proposals are
answered from the cache: what the pilot spent is not spent again.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.planning.model import Measures

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.run.ledger import LLMCall

# a rollout's calls (the rubric judge's included); the others optimize
ROLLOUT_PURPOSES = ("agent", "gate", "aggregate", "judge")


@dataclass(frozen=True)
class CallMeans:
    """Mean tokens and latency of one role's calls (latency over calls not read from a cache)."""

    calls: int
    prompt_tokens: float
    completion_tokens: float
    latency: float | None

    @classmethod
    def of(cls, events: list[LLMCall]) -> CallMeans | None:
        if not events:
            return None
        n = len(events)
        fresh = [e.latency for e in events if not e.cache_hit]
        return cls(
            n,
            sum(e.prompt_tokens for e in events) / n,
            sum(e.completion_tokens for e in events) / n,
            sum(fresh) / len(fresh) if fresh else None,
        )


@dataclass
class PilotResult:
    measures: Measures
    rollouts: int
    calls: int
    cache_hits: int
    tokens: int
    cost: float
    seconds: float
    agent: CallMeans | None
    optimizer: CallMeans | None
    purposes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        m = self.measures
        return {
            "rollouts": self.rollouts,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "tokens": self.tokens,
            "cost": round(self.cost, 6),
            "seconds": round(self.seconds, 3),
            "purposes": dict(sorted(self.purposes.items())),
            "calls_per_rollout": round(m.calls_per_rollout, 3),
            "failure_rate": round(m.failure_rate, 3),
            "targets": round(m.targets_per_step, 3),
            "proposals_changed": round(m.applied, 3),
        }


def run_pilot(
    config: Config,
    bench: Benchmark,
    splits: Splits,
    pool: Pool,
    *,
    benchmark_ref: str,
    cache_dir: Path,
    propose: bool,
    fallback: Measures,
) -> PilotResult:
    """Run the pilot (real LLM calls) and measure it; `fallback` fills what it cannot see."""
    import time

    from moscopt.app.assembly import open_lms
    from moscopt.app.workspace import create_run, make_trainer
    from moscopt.core.resources import seed_skills_dir
    from moscopt.core.skills import Pool as PoolType
    from moscopt.optimizer.engine.skills_phase import batches
    from moscopt.optimizer.policies.edit_targets import SUCCESS
    from moscopt.run.ledger import LLMCall
    from moscopt.run.ledger_read import read_events

    # the project's cache, named absolutely: the throwaway run lives outside the project
    llm = config.llm.model_copy(update={"cache_dir": str(cache_dir)})
    config = config.model_copy(update={"llm": llm})
    seeds = PoolType.load(seed_skills_dir(), require_gate=True)
    with tempfile.TemporaryDirectory(prefix="moscopt-plan-") as tmp:
        path = Path(tmp) / "pilot"
        run = create_run(path, config, pool, benchmark_ref, splits)
        start = time.perf_counter()
        with open_lms(
            config, run, roles=("agent", "optimizer"), log_events=True, bench=bench
        ) as lms:
            assert lms.optimizer is not None
            trainer = make_trainer(
                run=run, config=config, benchmark=bench, splits=splits,
                agent_lm=lms.agent, optimizer_lm=lms.optimizer, seeds=seeds,
            )  # fmt: skip
            ctx = trainer.ctx
            first = batches(ctx, 0)[0]

            async def pilot() -> tuple[int, int, list[bool]]:
                await trainer.skills.roll_out(first)
                rollouts = ctx.rollouts(batch_only=True)
                failed = sum(r.reward < SUCCESS for r in rollouts)
                targets = trainer.skills.targets.choose(rollouts, ctx.pool.names)
                changed: list[bool] = []
                if propose and targets:
                    proposed = await trainer.editor.propose_all(targets, rollouts)
                    changed = [p.changed for p in proposed]
                return failed, len(targets), changed

            failed, n_targets, changed = asyncio.run(pilot())
        seconds = time.perf_counter() - start
        calls = [e for e in read_events(run.events_path, kinds=["llm_call"])]
    events = [e for e in calls if isinstance(e, LLMCall)]
    rolling = [e for e in events if e.purpose.startswith(ROLLOUT_PURPOSES)]
    optimizing = [e for e in events if not e.purpose.startswith(ROLLOUT_PURPOSES)]
    reflecting = [e for e in optimizing if e.purpose.startswith(("reflect", "merge"))]
    purposes: dict[str, int] = {}
    for e in events:
        purposes[e.purpose] = purposes.get(e.purpose, 0) + 1
    n = len(first)
    measures = Measures(
        calls_per_rollout=len(rolling) / max(1, n),
        targets_per_step=float(n_targets),
        applied=(sum(changed) / len(changed)) if changed else fallback.applied,
        failure_rate=failed / max(1, n),
        reflect_calls=(len(reflecting) / n_targets) if changed else fallback.reflect_calls,
        measured=True,
    )
    return PilotResult(
        measures=measures,
        rollouts=n,
        calls=len(events),
        cache_hits=sum(e.cache_hit for e in events),
        tokens=sum(e.prompt_tokens + e.completion_tokens for e in events),
        cost=sum(e.cost for e in events),
        seconds=seconds,
        agent=CallMeans.of(rolling),
        optimizer=CallMeans.of(optimizing),
        purposes=purposes,
    )
