"""Phase 1, skill editing: per minibatch of training tasks, roll out, log, credit, watch the
gate, then one EditAdam step for each implicated skill (`policies.edit_targets`).

Interleaved (the default), each target is validated and decided on its own, in order. The "no
interleaving" ablation changes one thing: a minibatch's targets — and, in the first
`gating.edit_steps` minibatches of the epoch, the gate — are applied together and validated
once; the gate phase then has nothing left to do, so the number of gate edits is the same.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.agent.evaluate import run_tasks
from moscopt.core.credit import Outcome, assign_credit
from moscopt.core.skills import GATE_NAME
from moscopt.optimizer.engine.editing import Editor
from moscopt.optimizer.engine.gate_phase import GatePhase
from moscopt.run.ledger import RolloutEvent

if TYPE_CHECKING:
    from moscopt.benchmarks import Task
    from moscopt.config import Config
    from moscopt.optimizer.engine.context import Context
    from moscopt.optimizer.policies.edit_targets import EditTargets

RESPONSE_LOG_CHARS = 4000
DETAIL_LOG_CHARS = 2000  # of a grader's detail: a judge's unmet checks and criteria


def batches(ctx: Context, epoch: int) -> list[list[Task]]:
    """The epoch's skill-editing minibatches (a fixed shuffle of the training split)."""
    return minibatches(ctx.config, ctx.splits.train, epoch)


def minibatches(config: Config, train: Sequence[Task], epoch: int) -> list[list[Task]]:
    """`batches` of a config and a training split (what the application layer plans with)."""
    order = list(train)
    random.Random(f"{config.seed}:{epoch}").shuffle(order)
    opt = config.optimizer
    size = opt.batch or opt.minibatch
    chunks = [order[i : i + size] for i in range(0, len(order), size)]
    cap = config.training.max_steps_per_epoch
    return chunks[:cap] if cap else chunks


class SkillsPhase:
    def __init__(self, ctx: Context, editor: Editor, gate: GatePhase, targets: EditTargets) -> None:
        self.ctx = ctx
        self.editor = editor
        self.gate = gate
        self.targets = targets

    async def run(self) -> None:
        ctx = self.ctx
        todo = batches(ctx, ctx.state.epoch)
        while ctx.cursor.batch < len(todo):
            if not ctx.cursor.credited:
                await self.roll_out(todo[ctx.cursor.batch])
            rollouts = ctx.rollouts(batch_only=True)
            targets = self.targets.choose(rollouts, ctx.pool.names)
            if ctx.config.training.interleave:
                await self.edit_in_turn(targets, rollouts)
            elif ctx.cursor.target == 0:
                with_gate = ctx.llm_gate and ctx.cursor.batch < ctx.config.gating.edit_steps
                names = targets + ([GATE_NAME] if with_gate else [])
                await self.editor.decide_together(await self.editor.propose_all(names, rollouts))
                ctx.cursor.target = len(names)
                ctx.save()
            c = ctx.cursor
            c.batch += 1
            c.target, c.credited, c.batch_start = 0, False, None
            ctx.state.step += 1
            ctx.state.skill_steps = (ctx.state.skill_steps or 0) + 1
            ctx.save()
            ctx.emit(event="step")

    async def edit_in_turn(self, targets: Sequence[str], rollouts: Sequence[RolloutEvent]) -> None:
        ctx = self.ctx
        pending = list(targets[ctx.cursor.target :])
        for proposed in await self.editor.propose_all(pending, rollouts):
            await self.editor.decide(proposed)
            ctx.cursor.target += 1
            ctx.save()

    async def roll_out(self, tasks: Sequence[Task]) -> None:
        """Run the minibatch, log its rollouts, assign credit, watch the gate's parse failures."""
        ctx = self.ctx
        ctx.cursor.batch_start = ctx.state.checkpoint
        what = (
            f"rolling out minibatch {ctx.cursor.batch + 1} of {len(batches(ctx, ctx.state.epoch))}"
        )
        done = 0

        def one_more(_: object) -> None:
            nonlocal done
            done += 1
            ctx.doing(f"{what} ({done} of {len(tasks)} tasks done)")

        ctx.doing(f"{what} (0 of {len(tasks)} tasks done)")
        rollouts = await run_tasks(
            ctx.agent(ctx.pool, ctx.live_stats()),
            tasks,
            concurrency=ctx.config.llm.concurrency,
            sample=ctx.state.epoch,
            on_rollout=one_more,
        )
        offsets = []
        for r in rollouts:
            selections = [list(s) for s in r.selections]
            event = RolloutEvent(
                **ctx.where(),
                batch=ctx.cursor.batch,
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
                selections=selections if len(selections) > 1 else [],
                sources=list(r.sources) if len(selections) > 1 else [],
                offered=list(r.offered),
                detail=r.detail[:DETAIL_LOG_CHARS],
                **r.early_halt(),
            )
            offsets.append(ctx.record(event))
        ctx.cursor.rollouts = [*ctx.cursor.rollouts, *offsets]
        ctx.cursor.batch_rollouts = len(offsets)
        outcomes = [Outcome.of(r) for r in rollouts]
        credit = ctx.config.credit
        assign_credit(ctx.state, outcomes, credit.beta, credit.q_prior)
        if ctx.llm_gate:
            await self.gate.watch(rollouts)
        await ctx.after_rollouts(rollouts)
        ctx.cursor.credited = True
        # no state is saved without the phase's starting score: a resumed run would measure it
        # with the agent this minibatch just taught, not with the one the phase started with
        await ctx.settled()
        ctx.save()
