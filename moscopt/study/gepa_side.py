"""GEPA as the other side of `moscopt compare --with gepa`, at the same budget in LLM calls.

GEPA (`pip install 'moscopt[gepa]'`) runs through its public `gepa.optimize` API. Its
candidate is the pool as text components: one per skill (the SKILL.md body; the front matter,
which the gate reads, stays) and one for the gate. The adapter evaluates a candidate with
moscopt's own agent (the same harness, router, grader, model and sampling as MOSCOPT), and
GEPA's reflection calls the optimizer model through moscopt's LM layer. Both share one
`Budget`: every call either side makes is a call of the budget, and a call that would exceed
it is not made (`BudgetExceeded`).

The run folder `runs/gepa-s<seed>/` holds `events.jsonl` (every LLM call, as in a training
run), `gepa/` (GEPA's own run_dir: a killed run resumes from GEPA's last saved iteration, its
budget counted from `events.jsonl`, the rest replayed from the run's cache), `valset.jsonl`
(every full validation score seen), `skills/` (the best candidate: highest validation mean,
the earliest on ties) and `gepa.log`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from moscopt.core import jsonio
from moscopt.core.skills import GATE_NAME
from moscopt.errors import UserError
from moscopt.run.fsio import append_line, canonical_json, make_dirs
from moscopt.study.accounting import ledger_spending

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.lm import LM, Budget

PATIENCE = 25  # GEPA iterations without a new call (all answers cached) before it is stopped


def run_gepa(
    *, config: Config, skills_dir: Path, out: Path, budget_calls: int, seed: int
) -> dict[str, Any]:
    """Optimize the starting pool with GEPA until `budget_calls` calls are spent; write the
    best candidate to `out/skills/`; return the spending (as `moscopt.study.accounting`)."""
    gepa = require_gepa()
    from moscopt.app.assembly import starting_pool
    from moscopt.app.benchmark import resolve_benchmark
    from moscopt.lm import Budget, BudgetExceeded, build_lm
    from moscopt.run.ledger import EventLog

    bench, splits = resolve_benchmark(config, config.benchmark)
    pool, _ = starting_pool(skills_dir, config)
    make_dirs(out)
    events = out / "events.jsonl"
    cache_dir = Path(config.llm.cache_dir) if config.llm.cache_dir else None
    # calls made before a kill count (a resumed GEPA replays them from the cache, free)
    spent = ledger_spending(events)
    budget = Budget(budget_calls, config.llm.max_cost, calls=spent.calls, cost=spent.cost)
    log = EventLog(events)
    agent_lm = build_lm(config, role="agent", cache_dir=cache_dir, events=log, budget=budget)
    optimizer_lm = agent_lm
    if config.effective_optimizer_model != config.model:
        optimizer_lm = build_lm(
            config, role="optimizer", cache=agent_lm.cache, events=log, budget=budget
        )
    tracker = ValsetTracker(out / "valset.jsonl")
    adapter = SkillPoolAdapter(config, bench, pool, agent_lm, [t.id for t in splits.val], tracker)
    reflect = Reflection(optimizer_lm)
    stop = BudgetStop(budget, budget_calls, reflect)
    stopped = False
    try:
        gepa.optimize(
            seed_candidate=candidate_of(pool),
            trainset=list(splits.train),
            valset=list(splits.val),
            adapter=cast(Any, adapter),
            reflection_lm=reflect,
            stop_callbacks=[stop],
            run_dir=str(out / "gepa"),
            logger=FileLogger(out / "gepa.log"),
            seed=seed,
            reflection_minibatch_size=min(3, len(splits.train)),
            track_best_outputs=False,
            raise_on_exception=True,
        )
    except BudgetExceeded:
        stopped = True
    finally:
        for lm in {id(agent_lm): agent_lm, id(optimizer_lm): optimizer_lm}.values():
            close = getattr(lm, "close", None)
            if close is not None:
                close()
    if reflect.fatal is not None:  # GEPA swallows reflection errors: surface the fatal ones
        raise reflect.fatal
    best = tracker.best()
    pool_of(pool, best if best is not None else candidate_of(pool)).dump(out / "skills")
    training = ledger_spending(events).to_json()
    training.pop("cache_hits", None)
    return {
        **training,
        "budget": budget_calls,
        "stopped_at_budget": stopped or budget.calls >= budget_calls,
        "stalled": stop.stalled,
        "val_after": tracker.best_score(),
        "candidates": tracker.count(),
    }


def require_gepa() -> Any:
    """The `gepa` module, or a `UserError` saying how to install it."""
    try:
        import gepa
    except ImportError:
        raise UserError(
            "--with gepa needs GEPA: pip install 'moscopt[gepa]'", field="with"
        ) from None
    return gepa


def candidate_of(pool: Pool) -> dict[str, str]:
    """The pool as GEPA's text components: each skill's body, and the gate's."""
    texts = {s.name: s.body for s in pool.skills}
    if pool.gate is not None:
        texts[GATE_NAME] = pool.gate.body
    return texts


def pool_of(pool: Pool, candidate: dict[str, str]) -> Pool:
    """The pool with the candidate's texts as bodies (front matter unchanged)."""
    from moscopt.core.skills import Pool

    skills = tuple(s.with_body(candidate.get(s.name, s.body)) for s in pool.skills)
    gate = pool.gate
    if gate is not None:
        gate = gate.with_body(candidate.get(GATE_NAME, gate.body))
    return Pool(skills=skills, gate=gate)


class SkillPoolAdapter:
    """`gepa.GEPAAdapter`: evaluate a candidate pool with moscopt's agent; reflective records
    per component from the rollouts in which that skill was active (all of them for the gate)."""

    propose_new_texts = None

    def __init__(
        self,
        config: Config,
        bench: Benchmark,
        pool: Pool,
        lm: LM,
        val_ids: list[str],
        tracker: ValsetTracker,
    ) -> None:
        self.config, self.bench, self.pool, self.lm = config, bench, pool, lm
        self.val_ids = sorted(val_ids)
        self.tracker = tracker

    def evaluate(
        self, batch: list[Task], candidate: dict[str, str], capture_traces: bool = False
    ) -> Any:
        from gepa.core.adapter import EvaluationBatch

        from moscopt.agent.evaluate import run_tasks
        from moscopt.app.assembly import make_agent
        from moscopt.routing.build import make_router

        pool = pool_of(self.pool, candidate)
        router = make_router(self.config, pool, self.lm)
        agent = make_agent(self.config, self.bench, pool, router, self.lm)
        rollouts = asyncio.run(run_tasks(agent, batch, concurrency=self.config.llm.concurrency))
        scores = [float(r.reward) for r in rollouts]
        if sorted(t.id for t in batch) == self.val_ids:
            self.tracker.add(candidate, sum(scores) / max(1, len(scores)))
        outputs = [{"task": r.task_id, "answer": r.answer, "reward": r.reward} for r in rollouts]
        traces = list(zip(batch, rollouts, strict=True)) if capture_traces else None
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=traces)

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        traces = eval_batch.trajectories or []
        out: dict[str, list[dict[str, Any]]] = {}
        for name in components_to_update:
            used = [(t, r) for t, r in traces if name == GATE_NAME or name in r.active]
            out[name] = [_record(t, r) for t, r in (used or traces)]
        return out


def _record(task: Task, rollout: Any) -> dict[str, Any]:
    if rollout.reward >= 1.0:
        feedback = "Correct."
    else:
        feedback = f"Incorrect. The expected answer is {task.gold}."
        if rollout.detail:
            feedback += f" Grader: {rollout.detail}"
    return {
        "Inputs": task.prompt,
        "Generated Outputs": rollout.response,
        "Feedback": feedback,
        "Active skills": ", ".join(rollout.active) or "(none)",
    }


class Reflection:
    """GEPA's reflection LM: one call of the optimizer model per prompt."""

    def __init__(self, lm: LM) -> None:
        self.lm = lm
        self.fatal: Exception | None = None

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        from moscopt.lm import BudgetExceeded, LMFatalError

        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        try:
            return self.lm.complete(messages, purpose="gepa-reflect").text  # type: ignore[arg-type]
        except BudgetExceeded:
            raise
        except LMFatalError as e:
            self.fatal = self.fatal or e
            raise


class BudgetStop:
    """GEPA's stop condition: the budget is spent, a fatal LM error happened, or GEPA has gone
    `PATIENCE` iterations without a new call (every answer it asks for is in the cache)."""

    def __init__(self, budget: Budget, limit: int, reflect: Reflection) -> None:
        self.budget, self.limit, self.reflect = budget, limit, reflect
        self.last = -1
        self.idle = 0
        self.stalled = False

    def __call__(self, gepa_state: Any) -> bool:
        calls = self.budget.calls
        if calls >= self.limit or self.reflect.fatal is not None:
            return True
        self.idle = self.idle + 1 if calls == self.last else 0
        self.last = calls
        if self.idle >= PATIENCE:
            self.stalled = True
        return self.stalled


class ValsetTracker:
    """Every full validation evaluation GEPA asked for, kept in a file (it survives a kill)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[tuple[float, dict[str, str]]] = []
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = jsonio.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line
                self.seen.append((float(row["score"]), dict(row["candidate"])))

    def add(self, candidate: dict[str, str], score: float) -> None:
        digest = hashlib.sha256(canonical_json(candidate).encode()).hexdigest()[:16]
        if any(c == candidate for _, c in self.seen):
            return
        self.seen.append((score, dict(candidate)))
        row = {"candidate": candidate, "digest": digest, "score": score}
        append_line(self.path, json.dumps(row, sort_keys=True))

    def best(self) -> dict[str, str] | None:
        if not self.seen:
            return None
        top = max(score for score, _ in self.seen)
        return next(c for score, c in self.seen if score == top)

    def best_score(self) -> float | None:
        return max((s for s, _ in self.seen), default=None)

    def count(self) -> int:
        return len(self.seen)


class FileLogger:
    """GEPA's logger protocol, into a file instead of stdout."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def log(self, message: str) -> None:
        append_line(self.path, message.replace("\n", " | "))
