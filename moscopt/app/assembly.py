"""The one place that assembles moscopt's parts for train, eval, export and route: the starting
pool, the LMs of the roles a command needs, routers and agents (the benchmark a command works
on: `moscopt.app.benchmark`).

    with open_lms(config, run, roles=("agent",)) as lms:
        agent = make_agent(config, bench, pool, make_router(config, pool, lms.agent, stats=...))

`open_lms` checks and builds only the roles asked for (`eval` and `route` never need the
optimizer model's key) and always closes what it built.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from moscopt.agent.build import agent_for
from moscopt.config import Config
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.agent.skill_agent import SkillAgent
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.extensions.memory.params import MemoryState
    from moscopt.lm.base import LM
    from moscopt.routing.gate import Router
    from moscopt.run.rundir import RunDir

Role = Literal["agent", "optimizer", "judge"]


# -- benchmarks and pools ------------------------------------------------------------------------


def starting_pool(skills_dir: Path, config: Config) -> tuple[Pool, list[str]]:
    """The pool a new run starts from: the first N skills (by name) and a gate."""
    notes = []
    pool = Pool.load(skills_dir)
    n, k = config.pool.n, config.pool.k
    if len(pool) > n:
        notes.append(f"using the first {n} of {len(pool)} skills in {skills_dir} (pool.n = {n})")
        pool = Pool(skills=pool.skills[:n], gate=pool.gate)
    if k > len(pool):
        raise UserError(
            f"K = {k} but only {len(pool)} skills are available in {skills_dir}", field="pool.k"
        )
    notes.extend(pool_warnings(len(pool), config))
    if pool.gate is None and not (len(pool) == 1 and k == 1):
        seeds = Pool.load(seed_skills_dir(), require_gate=True)
        pool = Pool(skills=pool.skills, gate=seeds.gate)
        notes.append(f"{skills_dir} has no gate/SKILL.md: using the seed library's gate")
    from moscopt.planning.gate_cost import gate_cost_note

    gate_note = gate_cost_note(config, pool)
    return pool, notes + ([gate_note] if gate_note else [])


def pool_warnings(n: int, config: Config) -> list[str]:
    """K checked against the pool actually loaded (not `pool.n`): K >= N turns the gate off and
    is an error unless asked for (`--gate all`); K/N > 0.8 leaves the gate little choice."""
    k = config.pool.k
    if n == 1 and k == 1:
        return []  # single-skill optimization
    if k >= n and config.gating.policy != "all":
        raise UserError(
            f"K = {k} with a pool of {n} skills: the gate would select nothing; add skills, "
            "lower pool.k, or pass --gate all for the K = N ablation",
            field="pool.k",
        )
    if k < n and k / n > 0.8:
        return [f"K/N = {k}/{n} > 0.8: gating has little to choose; add skills or lower K"]
    return []


# -- LMs -----------------------------------------------------------------------------------------


@dataclass
class LMs:
    """The LMs of one command. `optimizer` is `agent` when both roles use one model."""

    agent: LM
    optimizer: LM | None = None
    judge: LM | None = None  # scores rubric criteria (a benchmark that needs one)


def model_of(config: Config, role: Role) -> str:
    from moscopt.lm.factory import model_for

    return model_for(config, role)


def check_models(config: Config, roles: Sequence[Role] = ("agent", "optimizer")) -> None:
    """Fail early, before any work, on a model of `roles` that cannot be called."""
    from moscopt.lm import check_model

    if config.agent.command and "agent" in roles:  # the external agent's program, up front
        from moscopt.agent.external import AgentCommand

        AgentCommand.from_config(config.agent)
    # a model served by `llm.deployments` is checked deployment by deployment when its LM is
    # built (`build_lm`), without waiting here for litellm's import
    checked = {config.model} if config.llm.deployments else set()
    for role in roles:
        model = model_of(config, role)
        if model not in checked:
            field = {"agent": "model", "optimizer": "optimizer_model", "judge": "judge_model"}[role]
            check_model(model, config.api_base, field=field)
            checked.add(model)


@contextlib.contextmanager
def open_lms(
    config: Config,
    run: RunDir | None,
    *,
    roles: Sequence[Role] = ("agent",),
    used_calls: int = 0,
    used_cost: float = 0.0,
    log_events: bool = False,
    bench: Benchmark | None = None,
    observe: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[LMs]:
    """The LMs of `roles`, sharing one budget and the project's response cache; closed on exit.

    With `bench` whose tasks need a judge model (rubric criteria), the judge LM is built too
    (`config.judge_model`, else the optimizer's model: the same LM when it is the same model)
    and set on the benchmark for the block (`Benchmark.use_judge`).

    Only training logs its calls in the run's events.jsonl (`log_events`): the log belongs to
    the trainer, which rewinds it to its last save when a run resumes. Evaluation, export and
    routing report their calls in their own output instead, and to `observe` (tracing) if
    given: one record per call, as the LM layer's sink has it.
    """
    from moscopt.lm import Budget, build_lm
    from moscopt.lm.cache import RECORD_FILE, shared_cache_dir

    if bench is not None and bench.needs_judge_model() and "judge" not in roles:
        roles = (*roles, "judge")
    check_models(config, roles)
    budget = Budget(config.llm.max_calls, config.llm.max_cost, calls=used_calls, cost=used_cost)
    # The response cache is the project's, shared by its runs; the run records what it used.
    cache_dir = shared_cache_dir(config.llm, run_path=run.path if run is not None else None)
    record = run.cache_dir / RECORD_FILE if run is not None else None
    events: Callable[[dict[str, Any]], None] | None = observe
    if run is not None and log_events:
        from moscopt.run.ledger import CallSink  # the run's event models: only when logging

        events = CallSink(run.events)
    built: list[LM] = []
    try:
        agent = build_lm(
            config, role="agent", cache_dir=cache_dir, record=record, events=events, budget=budget
        )
        built.append(agent)
        optimizer: LM | None = None
        if "optimizer" in roles:
            optimizer = agent
            if config.effective_optimizer_model != config.model:
                optimizer = build_lm(
                    config, role="optimizer", cache=agent.cache, events=events, budget=budget
                )
                built.append(optimizer)
        judge: LM | None = None
        if "judge" in roles:
            same = {config.model: agent, **({optimizer.model: optimizer} if optimizer else {})}
            judge = same.get(config.effective_judge_model)
            if judge is None:
                judge = build_lm(
                    config, role="judge", cache=agent.cache, events=events, budget=budget
                )
                built.append(judge)
            if bench is not None:
                bench.use_judge(judge)
        yield LMs(agent, optimizer, judge)
    finally:
        if bench is not None:
            bench.use_judge(None)
        for lm in built:
            close = getattr(lm, "close", None)
            if close is not None:
                close()


# -- routers and agents --------------------------------------------------------------------------


def make_agent(
    config: Config,
    bench: Benchmark,
    pool: Pool | None,
    router: Router,
    lm: LM,
    *,
    memory: MemoryState | None = None,
    tasks: Sequence[Task] = (),
) -> SkillAgent:
    """The agent `config` describes over `router`. `memory`: the learned execution-memory gates
    and halting controller (a run's, `stored_memory(state)`, or a mixture export's); `tasks`: the
    tasks it will run, if known, embedded for the familiarity router now in one batched call (the
    caller's event loop has not started: nothing waits). With `agent.aggregate: vote` the agent
    answers deterministic-answer tasks by the vote of the top `agent.vote_m` skills by
    familiarity (`moscopt.routing.voting`)."""

    agent = agent_for(lm, bench, pool, router, config, memory=memory)
    prefetch = getattr(router, "prefetch", None)
    if tasks and prefetch is not None:
        import asyncio

        asyncio.run(prefetch([t.prompt for t in tasks]))
    if config.agent.aggregate == "vote":
        from moscopt.routing.voting import VotingAgent, explainer

        explain = explainer(router)
        if explain is None:
            raise UserError(
                "agent.aggregate: vote ranks the skills by familiarity: use the familiarity "
                "router (eval --mode router, or gating.policy familiarity or hybrid)",
                field="agent.aggregate",
            )
        agent = VotingAgent(agent, explain, config.agent.vote_m)
    return agent
