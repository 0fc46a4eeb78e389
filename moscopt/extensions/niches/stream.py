"""Learning on a task stream (test-time evolution, as EvoChamber runs): every task is answered
once, in order, by the current pool, and what its reward teaches is learned at once.

The stream is cut into chunks of M_b tasks. Per chunk: roll out (the current pool, its gate, the
live statistics; logged as rollouts), credit, niches and CODREAM transfer (the extensions, as in
training); an EditAdam step for each skill implicated in a failure, with the routed insights as
evidence; every `lifecycle_every` chunks, with `evolution.policy: lifecycle`, one lifecycle
cycle; every `memory_every` chunks, long-term memory is condensed and the step and rejection
buffers cleared (training does this once per epoch). There is no validation split: a candidate
edit or lifecycle change is decided by the acceptance policy on a replay of stream tasks already
answered, from sample index 1 (the incumbent is measured afresh, never on its live answers).

Evidence the proposer never saw. One task in `hold_every` (4), drawn by a hash of its id, is
held out: answered live and credited like any other, but never shown to the proposer
(its trajectory, its expected answer). Decisions replay the last `window` held-out tasks answered
so far (this chunk's included), so an edit that only memorises the answers of the tasks it was
shown gains nothing where it is judged. (Replaying the shown tasks, as the stream once did,
accepted 40% of such edits.) Before the first held-out task is answered, no edit is proposed.

Resumable like training: the state is saved after every decision, with the cursor saying how
many chunks are done and whether the current one is rolled out and credited.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from moscopt.optimizer.engine.context import Context
from moscopt.optimizer.engine.editing import Editor
from moscopt.optimizer.engine.gate_phase import GatePhase
from moscopt.optimizer.engine.skills_phase import SkillsPhase
from moscopt.optimizer.engine.validation import Validator
from moscopt.run.ledger import TrainStart

if TYPE_CHECKING:
    from moscopt.benchmarks import Task
    from moscopt.optimizer.engine.policies import Policies


class Stream:
    """Runs (or resumes) the stream of `ctx` (its train split, in order)."""

    def __init__(
        self,
        ctx: Context,
        policies: Policies,
        *,
        window: int = 8,
        lifecycle_every: int = 5,
        memory_every: int = 10,
        hold_every: int = 4,
    ) -> None:
        """`policies`: the engine's, with an edit budget over the stream's chunks."""
        if hold_every < 2:
            raise ValueError(f"hold_every must be at least 2, got {hold_every}")
        self.ctx = ctx
        self.window, self.lifecycle_every, self.memory_every = window, lifecycle_every, memory_every
        self.hold_every = hold_every
        opt = ctx.config.optimizer
        size = opt.batch or opt.minibatch
        order = list(ctx.splits.train)
        self.chunks: list[list[Task]] = [order[i : i + size] for i in range(0, len(order), size)]
        self.validator = Validator(ctx, policies.acceptance, first_sample=1)  # see `replay_on`
        self.editor = Editor(ctx, self.validator, policies.budget)
        self.gate = GatePhase(ctx, self.validator, self.editor, policies.restoration)
        self.skills = SkillsPhase(ctx, self.editor, self.gate, policies.targets)
        self.targets = policies.targets

    @property
    def done(self) -> bool:
        return self.ctx.cursor.batch >= len(self.chunks)

    async def run(self) -> None:
        ctx, s = self.ctx, self.ctx.state
        ctx.run.rewind_events(s)
        s.status, s.phase = "running", "stream"
        if s.step == 0 and not ctx.cursor.credited and ctx.cursor.batch == 0:
            checkpoint = ctx.checkpoint(ctx.pool)
            ctx.record(
                TrainStart(pool=ctx.pool.digest()[:12], n=len(ctx.pool), checkpoint=checkpoint)
            )
        while not self.done:
            await self.step(self.chunks[ctx.cursor.batch])

    async def step(self, chunk: Sequence[Task]) -> None:
        ctx = self.ctx
        c = ctx.cursor
        if not c.credited:
            c.val_q = {k: round(v, 2) for k, v in ctx.state.q.items()}
            c.val_activations = dict(ctx.state.activations)
            await self.skills.roll_out(chunk)
        window = self.held_out()[-self.window :]
        held = {t.id for t in self.held_out()}
        rollouts = [r for r in ctx.rollouts(batch_only=True) if r.task_id not in held]
        if window:  # nothing held out yet: nothing to judge an edit on, so none is proposed
            self.replay_on(window)
            await self.skills.edit_in_turn(self.targets.choose(rollouts, ctx.pool.names), rollouts)
        index = c.batch + 1
        lifecycle = ctx.config.evolution.policy == "lifecycle"
        if window and lifecycle and index % self.lifecycle_every == 0:
            from moscopt.extensions.niches.lifecycle_apply import lifecycle_cycle

            await lifecycle_cycle(ctx, self.validator)
        if index % self.memory_every == 0 or index == len(self.chunks):
            await self.condense()
        c.batch += 1
        c.target, c.credited, c.batch_start = 0, False, None
        c.rollouts, c.batch_rollouts = [], 0  # the log keeps them; the stream reads them there
        ctx.state.step += 1
        ctx.state.skill_steps = (ctx.state.skill_steps or 0) + 1
        ctx.save()
        ctx.emit(event="step")

    def seen(self) -> list[Task]:
        """The stream's tasks answered so far (this chunk included)."""
        return [t for chunk in self.chunks[: self.ctx.cursor.batch + 1] for t in chunk]

    def held_out(self) -> list[Task]:
        """The held-out tasks answered so far (module docstring), in stream order."""
        return [t for t in self.seen() if self.holds(t)]

    def holds(self, task: Task) -> bool:
        """Whether `task` is held out: one task in `hold_every`, drawn by a hash of the run's
        seed and the task's id (not by position: a stream that alternates its kinds of task
        would hold out one kind only)."""
        key = f"{self.ctx.config.seed}:held:{task.id}".encode()
        return int(hashlib.sha256(key).hexdigest()[:8], 16) % self.hold_every == 0

    def replay_on(self, tasks: Sequence[Task]) -> None:
        """Decide this chunk's candidates by replaying `tasks` (a fresh reward cache)."""
        ctx = self.ctx
        ctx.val_tasks = list(tasks)
        ctx.freeze_validation()  # the chunk's decisions answer with the memory as it is now
        # sample 0 of these tasks is what the live pool answered: decide on fresh samples
        self.validator = Validator(ctx, self.validator.policy, first_sample=1)
        self.editor.validator = self.gate.validator = self.validator

    async def condense(self) -> None:
        s = self.ctx.state
        names = sorted(s.optimizers)
        await asyncio.gather(
            *(
                self.editor.adam(n).condense_memory(n, s.optimizers[n], s.epoch_accepted.get(n, []))
                for n in names
            )
        )
        for opt in s.optimizers.values():
            opt.step_buffer.clear()
            opt.rejection_buffer.clear()
        s.epoch_accepted = {}
