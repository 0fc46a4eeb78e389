"""Know before you spend: a run's expected LLM calls, tokens, cost and time per phase, and the
calls it may not exceed, from the config, the split sizes and a pilot minibatch
(`moscopt plan`, `moscopt train --dry-run`).

    plan = make_plan(config, skills_dir=..., benchmark="aime", project_root=..., pilot=True)
    print(render_table(plan))  # or plan.to_json()

`model` counts (pure); `pilot` measures one real minibatch; `render` prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.planning.model import Measures, Part, Shape, count, worst_case

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.planning.pilot import CallMeans, PilotResult

CHARS_PER_TOKEN = 4  # without a pilot: prompt tokens from prompt characters


@dataclass(frozen=True)
class Role:
    """One model's per-call figures: tokens, latency (None: unknown) and price per call."""

    model: str
    prompt_tokens: float
    completion_tokens: float
    latency: float | None
    cost: float
    measured: bool


@dataclass
class Plan:
    shape: Shape
    measures: Measures
    parts: list[Part]
    agent: Role
    optimizer: Role
    pilot: PilotResult | None
    budget: int | None  # llm.max_calls
    power: dict[str, Any] | None = None  # moscopt.planning.power (None: strict acceptance)
    serial: bool = False  # the model answers one request at a time (`planning.serial`)

    @property
    def bound(self) -> int:
        """The calls a full, uninterrupted run may not exceed."""
        return sum(p.bound for p in self.parts)

    def row(self, p: Part) -> dict[str, Any]:
        a, o = self.agent, self.optimizer
        tokens = p.agent * (a.prompt_tokens + a.completion_tokens) + p.optimizer * (
            o.prompt_tokens + o.completion_tokens
        )
        seconds = None
        if self.serial:
            from moscopt.planning.serial import serial_seconds

            seconds = serial_seconds(p, a, o)
        elif a.latency is not None and o.latency is not None:
            seconds = p.agent_waves * a.latency + p.optimizer_waves * o.latency
        return {
            "phase": p.phase,
            "part": p.part,
            "calls": round(p.calls, 1),
            "bound": p.bound,
            "tokens": round(tokens),
            "cost": round(p.agent * a.cost + p.optimizer * o.cost, 6),
            "waves": round(p.agent_waves + p.optimizer_waves, 1),
            "seconds": None if seconds is None else round(seconds, 1),
            "notes": list(p.notes),
        }

    def total(self) -> dict[str, Any]:
        rows = [self.row(p) for p in self.parts]
        seconds = [r["seconds"] for r in rows]
        return {
            "calls": round(sum(r["calls"] for r in rows), 1),
            "bound": self.bound,
            "tokens": sum(r["tokens"] for r in rows),
            "cost": round(sum(r["cost"] for r in rows), 6),
            "waves": round(sum(r["waves"] for r in rows), 1),
            "seconds": None if None in seconds else round(sum(seconds), 1),
        }

    def _shape(self) -> dict[str, Any]:
        s = self.shape
        return {
            "n": s.n, "k": s.k, "epochs": s.epochs, "steps_per_epoch": s.train_steps,
            "batch": s.batch, "val": s.val, "val_pool": s.val_pool or s.val,
            "agent_steps": s.steps,
            "gate_calls_per_rollout": s.gate_calls, "calls_per_rollout_max": s.rollout_calls,
            "max_val_samples": s.max_samples, "concurrency": s.concurrency,
            "evolution_cycles": s.evolution_epochs, "certificate_tasks": s.certificate,
        }  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.agent.model,
            "optimizer_model": self.optimizer.model,
            "shape": self._shape(),
            "estimates": "pilot" if self.pilot is not None else "config only (worst case)",
            "pilot": self.pilot.to_json() if self.pilot is not None else None,
            "per_call": {
                role: {
                    "model": r.model,
                    "prompt_tokens": round(r.prompt_tokens, 1),
                    "completion_tokens": round(r.completion_tokens, 1),
                    "latency": None if r.latency is None else round(r.latency, 4),
                    "cost": round(r.cost, 8),
                    "measured": r.measured,
                }
                for role, r in (("agent", self.agent), ("optimizer", self.optimizer))
            },
            "phases": [self.row(p) for p in self.parts],
            "total": self.total(),
            "max_calls": self.budget,
            "power": self.power,
            "serial": self.serial,
        }


def shape_of(
    config: Config, bench: Benchmark, splits: Splits, pool: Pool, *, start_epoch: int = 0
) -> Shape:
    """The run's shape, as the trainer will see it (`engine.skills_phase.batches` and friends),
    from epoch `start_epoch` (a resumed run's epochs done) to the last."""
    from moscopt.agent.skill_agent import agent_tools
    from moscopt.optimizer.policies.blocks import look_size
    from moscopt.planning.serial import real_concurrency
    from moscopt.routing.build import uses_llm_gate

    opt, gating, evo = config.optimizer, config.gating, config.evolution
    n, k = len(pool), config.pool.k
    size = opt.batch or opt.minibatch
    train = len(splits.train)
    sizes = [min(size, train - i) for i in range(0, train, size)]
    cap = config.training.max_steps_per_epoch
    sizes = sizes[:cap] if cap else sizes
    _, steps = agent_tools(
        config.agent.tools, bench, config.agent.max_steps, granularity=gating.granularity
    )
    single = n == 1 and k == 1
    routed = gating.policy in ("llm", "hybrid") and k < n and pool.gate is not None and not single
    selections = steps if gating.granularity == "step" else 1
    cycles = 0
    if evo.enabled and not single:
        # epochs e in [start, E) with (e + 1) % every == 0, in closed form (E may be 10^12)
        cycles = config.training.epochs // evo.every - start_epoch // evo.every
    halting = config.memory.halting
    n_val = max(1, math.ceil(opt.p_val * len(splits.val)))
    niches = config.niches
    return Shape(
        n=n,
        k=k,
        epochs=max(0, config.training.epochs - start_epoch),
        batch_sizes=tuple(sizes),
        val=look_size(n_val, opt.val_look),
        val_pool=n_val,
        steps=steps,
        gate_calls=selections if routed else 0,
        llm_gate=uses_llm_gate(config, pool),
        interleave=config.training.interleave,
        gate_edit_steps=gating.edit_steps,
        max_targets=opt.max_targets or k,
        minibatch=opt.minibatch,
        merge_batch=opt.merge_batch,
        max_samples=1 if opt.acceptance == "strict" else opt.max_val_samples,
        autonomous=opt.schedule == "autonomous",
        memory=opt.method == "editadam" and opt.long_term_memory,
        evolution_epochs=cycles,
        lifecycle=evo.policy == "lifecycle",
        eliminate=evo.eliminate,
        cobreed=evo.cobreed,
        fresh_skills=evo.fresh_skills,
        codream_sessions=niches.max_sessions if niches.transfer else 0,
        concurrency=real_concurrency(config),
        external_agent=bool(config.agent.command),
        aggregate_calls=1 if halting.enabled and halting.aggregator == "llm" else 0,
        judge_calls=int(bench.needs_judge_model(splits["all"])),
        overlap=opt.overlap,
        certificate=config.training.certificate_samples * held_out_tasks(config, splits),
    )


def held_out_tasks(config: Config, splits: Splits) -> int:
    """The tasks the end-of-run certificate uses (`engine.certificate.held_out`)."""
    if splits.test:
        return len(splits.test)
    return len(splits.val) - max(1, math.ceil(config.optimizer.p_val * len(splits.val)))


def make_plan(
    config: Config,
    *,
    skills_dir: Path,
    benchmark: str | None,
    project_root: Path,
    pilot: bool = True,
    propose: bool = True,
    latency: float | None = None,
    notes: list[str] | None = None,
    start_epoch: int = 0,
    tasks: Path | None = None,
    held_out: Path | None = None,
) -> Plan:
    """The plan of `moscopt train` with this config. `pilot`: measure one real minibatch (LLM
    calls); `propose`: and one reflect/propose per target; `latency`: seconds per call to
    assume where nothing was measured (None: time unknown); `start_epoch`: the epochs a resumed
    run has done; `tasks`, `held_out`: a task file instead of a benchmark, as for `train`."""
    from moscopt.app.assembly import check_models, starting_pool
    from moscopt.app.benchmark import benchmark_ref, training_benchmark

    bench, splits, _ = training_benchmark(config, benchmark, tasks, held_out)
    pool, messages = starting_pool(skills_dir, config)
    if notes is not None:
        notes.extend(messages)
    shape = shape_of(config, bench, splits, pool, start_epoch=start_epoch)
    measures = worst_case(shape)
    result = None
    if pilot:
        from moscopt.lm.cache import shared_cache_dir
        from moscopt.planning.pilot import run_pilot

        check_models(config)
        cache = shared_cache_dir(config.llm, run_path=project_root / config.runs_dir / "plan")
        result = run_pilot(
            config, bench, splits, pool, benchmark_ref=benchmark_ref(bench),
            cache_dir=cache, propose=propose, fallback=measures,
        )  # fmt: skip
        measures = result.measures
    agent, optimizer = _roles(config, bench, splits, pool, result, latency)
    from moscopt.planning.serial import answering_roles, is_serial

    if result is not None:  # a serial model's latency is mostly queueing: its answering time
        agent, optimizer = answering_roles(agent, optimizer, result.answering)
    power = None
    if config.optimizer.acceptance == "paired":
        from moscopt.planning.power import power_summary

        opt = config.optimizer
        power = power_summary(
            shape.val, opt.max_val_samples, opt.confidence, opt.margin, pool=shape.val_pool
        )
    parts = count(shape, measures)
    plan = Plan(shape, measures, parts, agent, optimizer, result, config.llm.max_calls, power)
    plan.serial = is_serial(config)
    return plan


def _roles(
    config: Config,
    bench: Benchmark,
    splits: Splits,
    pool: Pool,
    pilot: PilotResult | None,
    latency: float | None,
) -> tuple[Role, Role]:
    """Per-call tokens, latency and price of the agent's and the optimizer's model: measured
    by the pilot, else estimated from the prompts' text (characters / 4) and half the answer
    budget."""
    from moscopt.lm.pricing import Pricing
    from moscopt.optimizer.editadam import PROPOSAL_TOKENS

    tasks = splits.train or splits.val
    task_chars = sum(len(t.prompt) for t in tasks) / max(1, len(tasks))
    skill_chars = sum(len(s.body) for s in pool) / max(1, len(pool))
    k = min(config.pool.k, len(pool))
    agent_est = ((task_chars + k * skill_chars) / CHARS_PER_TOKEN, config.sampling.max_tokens / 2)
    optimizer_est = ((skill_chars + 4 * task_chars + 4000) / CHARS_PER_TOKEN, PROPOSAL_TOKENS / 4)
    pricing = Pricing()

    def role(model: str, means: CallMeans | None, estimate: tuple[float, float]) -> Role:
        if means is not None:
            p, c, lat = means.prompt_tokens, means.completion_tokens, means.latency
        else:
            p, c, lat = estimate[0], estimate[1], None
        lat = lat if lat is not None else latency
        cost = pricing.cost(model, round(p), round(c))
        return Role(model, p, c, lat, cost, means is not None)

    agent_means = pilot.agent if pilot is not None else None
    opt_means = pilot.optimizer if pilot is not None else None
    agent = role(config.model, agent_means, agent_est)
    if opt_means is None and agent_means is not None and agent.latency is not None:
        latency = latency if latency is not None else agent.latency  # same server, likely
    optimizer = role(config.effective_optimizer_model, opt_means, optimizer_est)
    return agent, optimizer


__all__ = ["Measures", "Plan", "Shape", "count", "make_plan", "shape_of"]
