"""The MOSCOPT trainer: three-phase interleaved optimization of a skill pool and its gate.

Per epoch: (1) skill editing on minibatches of training tasks, (2) gate editing on routing
failures, (3) every E epochs collective evolution; then long-term memory and the epoch-local
buffers are reset. Every edit is validated on the validation split and kept only on strict
improvement (evolution: when the score does not drop), so the pool's validation score never
decreases.

Resumability: the trainer saves state after every edit decision and every phase, with a
`Cursor` that says what is done. Every random choice is a function of (seed, epoch, task), LLM
answers come from the cache, and the rollouts a step reflects on are read back from the event
log, so a run killed at any point and resumed makes the same decisions as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonpatch

from moscopt.agent import SkillAgent, agent_tools
from moscopt.config import Config
from moscopt.credit import Outcome, assign_credit, forget
from moscopt.editadam import Candidate, EditAdam, format_trajectories
from moscopt.edits import ProposalError
from moscopt.evaluate import run_tasks
from moscopt.evolve import next_generation
from moscopt.gating import (
    FixedSkills,
    GateStats,
    LLMGate,
    ParseFailureMonitor,
    RandomGate,
    Router,
    constrained_gate,
    summary_table,
)
from moscopt.harness import Rollout
from moscopt.lm.base import LM
from moscopt.rundir import RunDir
from moscopt.schedule import budget
from moscopt.skills import GATE_NAME, Pool, Skill
from moscopt.state import Cursor, OptimizerState, RunState, ScorePoint, Totals

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits, Task

ProgressFn = Callable[[dict[str, Any]], None]
RESPONSE_LOG_CHARS = 4000


@dataclass(frozen=True)
class Record:
    """A rollout as logged in events.jsonl: what reflection and gate editing read."""

    task_id: str
    skills: tuple[str, ...]
    reward: float
    response: str
    answer: str | None
    error: str | None
    gate_error: str | None
    activation: str

    @classmethod
    def from_event(cls, e: dict[str, Any]) -> Record:
        return cls(
            e["task_id"],
            tuple(e["skills"]),
            float(e["reward"]),
            e.get("response", ""),
            e.get("answer"),
            e.get("error"),
            e.get("gate_error"),
            e.get("activation", ""),
        )

    def as_rollout(self, task: Task) -> Rollout:
        messages: list[Any] = [
            {"role": "user", "content": task.prompt},
            {"role": "assistant", "content": self.response},
        ]
        return Rollout(
            task_id=self.task_id,
            skills=self.skills,
            activation=self.activation,
            messages=messages,
            response=self.response,
            answer=self.answer,
            reward=self.reward,
            error=self.error,
            gate_error=self.gate_error,
        )


class Trainer:
    """Runs (or resumes) the optimization stored in `run`."""

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
    ) -> None:
        self.run = run
        self.config = config
        self.benchmark = benchmark
        self.splits = splits
        self.agent_lm = agent_lm
        self.optimizer_lm = optimizer_lm
        self.seeds = seeds
        self.progress = progress
        self.state: RunState = run.load_state()
        self.pool: Pool = run.load_pool(self.state)
        self.tasks = {t.id: t for t in splits["all"]}
        self._base_totals = self.state.totals.model_copy()
        self._val_cache: dict[str, float] = {}
        p_val = config.optimizer.p_val
        self.val_tasks = splits.val[: max(1, math.ceil(p_val * len(splits.val)))]
        self.monitor = ParseFailureMonitor(
            config.gating.rebuild_threshold,
            config.gating.rebuild_window,
            self.state.gate_failure_rates,
        )

    # -- modes -----------------------------------------------------------------------------------

    @property
    def single(self) -> bool:
        """N = K = 1: single-skill optimization (SkillOpt); no gate call, no evolution."""
        return len(self.pool) == 1 and self.config.pool.k == 1

    @property
    def llm_gate(self) -> bool:
        return (
            self.config.gating.policy == "llm"
            and self.config.pool.k < len(self.pool)
            and self.pool.gate is not None
        )

    @property
    def cursor(self) -> Cursor:
        return self.state.cursor

    def router(self, pool: Pool, stats: GateStats) -> Router:
        if self.single:
            return FixedSkills(pool.names[:1], "single")
        policy = self.config.gating.policy
        if policy == "all" or self.config.pool.k >= len(pool):  # K = N: nothing to select
            return FixedSkills(pool.names, "all")
        if policy == "random" or pool.gate is None:
            return RandomGate(pool, self.config.pool.k, self.config.seed)
        constrained = constrained_gate(self.agent_lm.model, self.config.gating.output)
        return LLMGate(self.agent_lm, pool, self.config.pool.k, stats, constrained=constrained)

    def agent(self, pool: Pool, stats: GateStats) -> SkillAgent:
        agent_cfg = self.config.agent
        tools, steps = agent_tools(agent_cfg.tools, self.benchmark, agent_cfg.max_steps)
        return SkillAgent(
            self.agent_lm,
            self.benchmark,
            pool,
            self.router(pool, stats),
            tools=tools,
            max_steps=steps,
            granularity=self.config.gating.granularity,
        )

    def live_stats(self) -> GateStats:
        return self._stats(self.state.q, self.state.activations)

    def val_stats(self) -> GateStats:
        return self._stats(self.cursor.val_q, self.cursor.val_activations)

    def _stats(self, q: dict[str, float], activations: dict[str, int]) -> GateStats:
        return GateStats(
            q=dict(q),
            activations=dict(activations),
            enriched=self.state.epoch >= self.config.gating.enrich_epoch,
            c_min=self.config.credit.c_min,
        )

    # -- persistence -----------------------------------------------------------------------------

    def save(self) -> None:
        totals = self._base_totals.model_copy()
        lms = (
            [self.agent_lm]
            if self.agent_lm is self.optimizer_lm
            else [self.agent_lm, self.optimizer_lm]
        )
        for lm in lms:
            stats = getattr(lm, "stats", None)
            if stats is not None:
                totals = _add_totals(totals, stats)
        self.state.totals = totals
        self.run.save(self.state, self.pool)

    def emit(self, **fields: Any) -> None:
        if self.progress is not None:
            self.progress(
                {
                    "epoch": min(self.state.epoch, self.config.training.epochs - 1),
                    "epochs": self.config.training.epochs,
                    "step": self.state.step,
                    "phase": self.cursor.phase,
                    "best_val": self.cursor.best_val,
                    "accepted": self.state.accepted_edits(),
                    "rejected": self.state.rejected_edits(),
                    "calls": self.state.totals.calls,
                    "tokens": self.state.totals.prompt_tokens + self.state.totals.completion_tokens,
                    "cost": self.state.totals.cost,
                    **fields,
                }
            )

    # -- validation ------------------------------------------------------------------------------

    async def validate(self, pool: Pool) -> float:
        """Mean reward on the validation split (sample 0, the phase's frozen gate view)."""
        stats = self.val_stats()
        key = hashlib.sha256(
            f"{pool.digest()}|{sorted(stats.q.items())}|{sorted(stats.activations.items())}|"
            f"{stats.enriched}".encode()
        ).hexdigest()
        if key in self._val_cache:
            return self._val_cache[key]
        rollouts = await run_tasks(
            self.agent(pool, stats), self.val_tasks, concurrency=self.config.llm.concurrency
        )
        score = sum(r.reward for r in rollouts) / max(1, len(rollouts))
        self._val_cache[key] = score
        self.run.events.append(
            "validation",
            epoch=self.state.epoch,
            step=self.state.step,
            pool=pool.digest()[:12],
            score=score,
            tasks=len(rollouts),
            fallbacks=sum(r.activation == "fallback" for r in rollouts),
        )
        return score

    async def start_phase(self, phase: str) -> None:
        """Freeze the gate's view of the statistics and measure the current pool under it."""
        c = self.cursor
        c.phase = phase  # type: ignore[assignment]
        c.batch, c.target, c.credited, c.batch_start = 0, 0, False, None
        c.val_q = {k: round(v, 2) for k, v in self.state.q.items()}
        c.val_activations = dict(self.state.activations)
        c.best_val = await self.validate(self.pool)
        self.state.phase = phase
        self.state.val_history.append(
            ScorePoint(epoch=self.state.epoch, step=self.state.step, phase=phase, score=c.best_val)
        )
        self.save()
        self.emit(event="phase")

    # -- the loop --------------------------------------------------------------------------------

    async def train(self) -> RunState:
        self.run.rewind_events(self.state)
        self.state.status = "running"
        if self.state.cursor.best_val is None and self.state.epoch == 0:
            self.run.events.append("train_start", pool=self.pool.digest()[:12], n=len(self.pool))
            await self.start_phase("skills")
        epochs = self.config.training.epochs
        while self.state.epoch < epochs:
            phase = self.cursor.phase
            if phase == "skills":
                await self.phase_skills()
                await self.start_phase("gate")
            elif phase == "gate":
                if self.llm_gate and self.config.training.interleave:
                    await self.phase_gate()
                await self.start_phase("evolve")
            elif phase == "evolve":
                if self._evolution_due():
                    await self.phase_evolve()
                self.cursor.phase = "memory"
                self.save()
            elif phase == "memory":
                await self.end_epoch()
        self.state.status = "done"
        self.state.phase = self.cursor.phase = "done"
        self.save()
        self.emit(event="done")
        return self.state

    def _evolution_due(self) -> bool:
        cfg = self.config.evolution
        return cfg.enabled and not self.single and (self.state.epoch + 1) % cfg.every == 0

    # -- phase 1: skills -------------------------------------------------------------------------

    def batches(self) -> list[list[Task]]:
        order = list(self.splits.train)
        random.Random(f"{self.config.seed}:{self.state.epoch}").shuffle(order)
        size = self.config.optimizer.minibatch
        chunks = [order[i : i + size] for i in range(0, len(order), size)]
        cap = self.config.training.max_steps_per_epoch
        return chunks[:cap] if cap else chunks

    def total_steps(self) -> int:
        return max(1, self.config.training.epochs * len(self.batches()))

    async def phase_skills(self) -> None:
        batches = self.batches()
        while self.cursor.batch < len(batches):
            b = self.cursor.batch
            if not self.cursor.credited:
                await self.roll_out(batches[b], b)
            records = self.batch_records(b)
            targets = self.edit_targets(records)
            if self.config.training.interleave:
                while self.cursor.target < len(targets):
                    await self.edit(targets[self.cursor.target], records)
                    self.cursor.target += 1
                    self.save()
            elif self.cursor.target == 0:
                await self.edit_simultaneously(targets, records)
                self.cursor.target = len(targets)
                self.save()
            self.cursor.batch += 1
            self.cursor.target, self.cursor.credited, self.cursor.batch_start = 0, False, None
            self.state.step += 1
            self.save()
            self.emit(event="step")

    async def roll_out(self, tasks: Sequence[Task], b: int) -> None:
        """Run the minibatch, log its rollouts, assign credit, watch the gate's parse failures."""
        self.cursor.batch_start = self.state.checkpoint
        rollouts = await run_tasks(
            self.agent(self.pool, self.live_stats()),
            tasks,
            concurrency=self.config.llm.concurrency,
            sample=self.state.epoch,
        )
        for r in rollouts:
            self.run.events.append(
                "rollout",
                epoch=self.state.epoch,
                batch=b,
                step=self.state.step,
                task_id=r.task_id,
                skills=list(r.skills),
                activation=r.activation,
                gate_error=r.gate_error,
                reward=r.reward,
                answer=r.answer,
                response=r.response[-RESPONSE_LOG_CHARS:],
                error=r.error,
                calls=r.calls,
                tokens=r.prompt_tokens + r.completion_tokens,
                cost=r.cost,
            )
        assign_credit(
            self.state, [Outcome(r.skills, r.reward) for r in rollouts], self.config.credit.beta
        )
        if self.llm_gate:
            self.watch_gate(rollouts)
        self.cursor.credited = True
        self.save()

    def watch_gate(self, rollouts: Sequence[Rollout]) -> None:
        failures = sum(r.activation in ("fallback", "partial") for r in rollouts)
        if failures / max(1, len(rollouts)) <= self.config.gating.rebuild_threshold:
            assert self.pool.gate is not None
            self.state.last_good_gate = self.pool.gate.to_json()
        restore = self.monitor.record_step(failures, len(rollouts))
        self.state.gate_failure_rates = list(self.monitor.history)
        if restore and self.state.last_good_gate is not None:
            good = Skill.from_json(self.state.last_good_gate)
            if good != self.pool.gate:
                self.pool = self.pool.replace(good)
                self.run.events.append(
                    "gate_restored",
                    epoch=self.state.epoch,
                    step=self.state.step,
                    pool=self.pool.digest()[:12],
                )

    def batch_records(self, b: int) -> list[Record]:
        return [
            Record.from_event(e)
            for e in self.run.events.of_type("rollout")
            if e["epoch"] == self.state.epoch and e["batch"] == b
        ]

    def epoch_records(self) -> list[Record]:
        return [
            Record.from_event(e)
            for e in self.run.events.of_type("rollout")
            if e["epoch"] == self.state.epoch
        ]

    def edit_targets(self, records: Sequence[Record]) -> list[str]:
        """Skills active in failed rollouts, most failures first, at most `max_targets` (K)."""
        counts = Counter(s for r in records if r.reward < 1.0 for s in r.skills if s in self.pool)
        cap = self.config.optimizer.max_targets or self.config.pool.k
        return sorted(counts, key=lambda s: (-counts[s], s))[:cap]

    def evidence(self, name: str, records: Sequence[Record]) -> str:
        mine = [r for r in records if name in r.skills]
        failed = [r for r in mine if r.reward < 1.0]
        passed = [r for r in mine if r.reward >= 1.0]
        chosen = failed[: self.config.optimizer.merge_batch] + passed[:2]
        rollouts = [r.as_rollout(self.tasks[r.task_id]) for r in chosen if r.task_id in self.tasks]
        gold = {
            r.task_id: str(self.tasks[r.task_id].gold) for r in chosen if r.task_id in self.tasks
        }
        return format_trajectories(rollouts, gold)

    async def edit_budget(self, adam: EditAdam) -> int:
        cfg = self.config.optimizer
        value = budget(cfg.schedule, self.state.step, self.total_steps(), cfg.l_max, cfg.l_min)
        if value is not None:
            return value
        recent = [p.score for p in self.state.val_history[-5:]]
        hard = self.cursor.best_val or 0.0
        return await adam.choose_budget(hard, hard, ", ".join(f"{s:.3f}" for s in recent) or "none")

    def scores_text(self, records: Sequence[Record]) -> str:
        batch = sum(r.reward for r in records) / max(1, len(records))
        return (
            f"validation score of the current pool: {self.cursor.best_val:.3f}; "
            f"this minibatch: {batch:.3f} over {len(records)} tasks"
        )

    async def reflect_and_propose(
        self, name: str, records: Sequence[Record]
    ) -> tuple[EditAdam, OptimizerState, Candidate | None]:
        """Reflect on `records`, propose and apply; the candidate (None: unusable proposal)."""
        kind = "gate" if name == GATE_NAME else "skill"
        adam = EditAdam(self.optimizer_lm, self.config.optimizer, kind=kind)
        opt = self.state.optimizers.setdefault(name, OptimizerState())
        target = self.pool.get(name)
        if kind == "gate":
            table = summary_table(self.pool, q=self.state.q, activations=self.state.activations)
            evidence = self.routing_cases(records)
            await adam.reflect(target, evidence, opt, k=self.config.pool.k, table=table)
        else:
            await adam.reflect(target, self.evidence(name, records), opt)
        max_edits = await self.edit_budget(adam)
        try:
            proposal = await adam.propose(
                target, opt, scores=self.scores_text(records), max_edits=max_edits
            )
        except ProposalError as e:
            self.run.events.append(
                "edit", target=name, status="unusable", reason=str(e)[:300], **self._where()
            )
            return adam, opt, None
        return adam, opt, adam.apply(target, proposal, max_edits)

    async def edit(self, name: str, records: Sequence[Record]) -> None:
        """One EditAdam step on one skill (or the gate): reflect, propose, apply, validate."""
        adam, opt, candidate = await self.reflect_and_propose(name, records)
        if candidate is None:
            return
        proposal = candidate.proposal
        before = self.cursor.best_val or 0.0
        outcomes = [
            {"op": o.edit.op, "status": o.status, "reason": o.reason}
            for o in candidate.applied.outcomes
        ]
        if not candidate.changed:
            reasons = (
                "; ".join(sorted({o["reason"] for o in outcomes if o["reason"]})) or "no edits"
            )
            adam.reject(
                opt,
                step=self.state.step,
                before=before,
                after=before,
                summary=f"not applied: {reasons}",
            )
            self.run.events.append(
                "edit", target=name, status="not_applied", outcomes=outcomes, **self._where()
            )
            return
        new_pool = self.pool.replace(candidate.skill)
        after = await self.validate(new_pool)
        summary = proposal.summary(self.config.optimizer.summary_chars)
        accepted = after > before
        self._decide(
            name,
            adam,
            opt,
            new_pool,
            accepted,
            before,
            after,
            summary,
            proposal.reasoning,
            outcomes,
        )

    def _decide(
        self,
        name: str,
        adam: EditAdam,
        opt: OptimizerState,
        new_pool: Pool,
        accepted: bool,
        before: float,
        after: float,
        summary: str,
        reasoning: str,
        outcomes: list[dict[str, str]],
    ) -> None:
        patch = None
        if accepted:
            patch = jsonpatch.make_patch(self.pool.to_json(), new_pool.to_json()).patch
            self.pool = new_pool
            self.cursor.best_val = after
            opt.accepted += 1
            self.state.epoch_accepted.setdefault(name, []).append(summary)
            self.state.val_history.append(
                ScorePoint(
                    epoch=self.state.epoch,
                    step=self.state.step,
                    phase=self.cursor.phase,
                    score=after,
                )
            )
        else:
            adam.reject(opt, step=self.state.step, before=before, after=after, summary=summary)
        self.run.events.append(
            "edit",
            target=name,
            status="accepted" if accepted else "rejected",
            before=before,
            after=after,
            summary=summary,
            reasoning=reasoning[:1000],
            outcomes=outcomes,
            patch=patch,
            **self._where(),
        )
        self.emit(event="edit", target=name, verdict=accepted, score=after)

    def _where(self) -> dict[str, Any]:
        return {"epoch": self.state.epoch, "step": self.state.step, "phase": self.cursor.phase}

    async def edit_simultaneously(self, targets: Sequence[str], records: Sequence[Record]) -> None:
        """The "no interleaving" ablation: skills and gate edited at once, validated together."""
        names = list(targets) + ([GATE_NAME] if self.llm_gate else [])
        new_pool, parts, adams = self.pool, [], {}
        for name in names:
            adams[name], _, candidate = await self.reflect_and_propose(name, records)
            if candidate is not None and candidate.changed:
                new_pool = new_pool.replace(candidate.skill)
                parts.append(
                    (name, candidate.proposal.summary(self.config.optimizer.summary_chars))
                )
        if not parts:
            return
        before = self.cursor.best_val or 0.0
        after = await self.validate(new_pool)
        accepted = after > before
        summary = " | ".join(f"{n}: {s}" for n, s in parts)[: self.config.optimizer.summary_chars]
        for i, (name, part) in enumerate(parts):
            opt = self.state.optimizers[name]
            if i == 0:
                self._decide(
                    name, adams[name], opt, new_pool, accepted, before, after, summary, "", []
                )
            elif accepted:
                opt.accepted += 1
                self.state.epoch_accepted.setdefault(name, []).append(part)
            else:
                adams[name].reject(
                    opt, step=self.state.step, before=before, after=after, summary=part
                )

    # -- phase 2: gate ---------------------------------------------------------------------------

    def routing_cases(self, records: Sequence[Record], limit: int = 8) -> str:
        """Failed rollouts where skills with higher Q were left out, and gate parse failures."""
        q = self.state.q
        lines = []
        for r in records:
            if r.reward >= 1.0 and not r.gate_error:
                continue
            task = self.tasks.get(r.task_id)
            text = " ".join((task.prompt if task else r.task_id).split())[:400]
            floor = min((q.get(s, 0.0) for s in r.skills), default=0.0)
            better = sorted(
                (s for s in self.pool.names if s not in r.skills and q.get(s, 0.0) > floor),
                key=lambda s: -q.get(s, 0.0),
            )[:3]
            line = f"- task: {text}\n  activated: {', '.join(r.skills)} -> reward {r.reward:.2f}"
            if better:
                line += "\n  higher-scoring skills left out: " + ", ".join(
                    f"{s} ({q[s]:.2f})" for s in better
                )
            if r.gate_error:
                line += f"\n  the router's answer could not be used: {r.gate_error}"
            lines.append(line)
            if len(lines) == limit:
                break
        return "\n".join(lines)

    async def phase_gate(self) -> None:
        records = self.epoch_records()
        while self.cursor.batch < self.config.gating.edit_steps:
            if not self.routing_cases(records):
                break
            await self.edit(GATE_NAME, records)
            self.cursor.batch += 1
            self.state.step += 1
            self.save()
            self.emit(event="step")

    # -- phase 3: collective evolution -----------------------------------------------------------

    async def phase_evolve(self) -> None:
        s = self.state
        before = self.cursor.best_val or 0.0
        pool, notes = await next_generation(
            self.optimizer_lm,
            self.pool,
            s,
            self.config,
            self.seeds,
            fresh_rng=random.Random(f"{self.config.seed}:fresh:{s.epoch}"),
        )
        if pool.digest() == self.pool.digest():
            self.run.events.append("evolution", changes=notes, accepted=False, **self._where())
            return
        after = await self.validate(pool)
        accepted = after >= before  # evolution may keep the score: it buys diversity
        if accepted:
            for name in set(self.pool.names) - set(pool.names):
                forget(s, name)
            self.pool = pool
            self.cursor.best_val = after
            s.names_used = sorted(set(s.names_used) | set(pool.names))
        self.run.events.append(
            "evolution",
            changes=notes,
            before=before,
            after=after,
            accepted=accepted,
            pool=pool.digest()[:12],
            **self._where(),
        )
        self.save()
        self.emit(event="evolution", verdict=accepted, score=after)

    # -- end of epoch ----------------------------------------------------------------------------

    async def end_epoch(self) -> None:
        for name, opt in sorted(self.state.optimizers.items()):
            accepted = self.state.epoch_accepted.get(name, [])
            adam = EditAdam(
                self.optimizer_lm,
                self.config.optimizer,
                kind="gate" if name == GATE_NAME else "skill",
            )
            await adam.condense_memory(name, opt, accepted)
            opt.step_buffer.clear()
            opt.rejection_buffer.clear()
        self.state.epoch_accepted = {}
        self.run.events.append("epoch_end", epoch=self.state.epoch, best_val=self.cursor.best_val)
        self.state.epoch += 1
        self.cursor.epoch = self.state.epoch
        if self.state.epoch < self.config.training.epochs:
            await self.start_phase("skills")
        else:
            self.save()


def _add_totals(totals: Totals, stats: Any) -> Totals:
    return Totals(
        calls=totals.calls + int(getattr(stats, "calls", 0)),
        cache_hits=totals.cache_hits + int(getattr(stats, "cache_hits", 0)),
        prompt_tokens=totals.prompt_tokens + int(getattr(stats, "prompt_tokens", 0)),
        completion_tokens=totals.completion_tokens + int(getattr(stats, "completion_tokens", 0)),
        cost=totals.cost + float(getattr(stats, "cost", 0.0)),
    )


def initial_state(config: Config, pool: Pool, benchmark: str, splits: Splits) -> RunState:
    return RunState(
        benchmark=benchmark,
        names_used=sorted(pool.names),
        splits={name: [t.id for t in splits[name]] for name in ("train", "val", "test")},
        extra={"seed": config.seed},
    )
