"""`NicheObserver`: what the niches extension does after each minibatch: it learns niches and
competence from the minibatch's rollouts and runs CODREAM transfer.

After each minibatch (its rollouts logged and credited, before the state is saved):
1. every rollout's task gets its niche; each active skill's competence there is updated, and
   so are the pair statistics behind per-niche synergy;
2. triggers: a failed rollout ("failure"), or a task whose samples disagree (this sample and
   the task's previous one differ in success: "disagreement"; the failed one is reviewed);
3. with `niches.transfer`, at most `max_sessions` CODREAM sessions, one per niche, most
   informative triggers first (disagreements, then failures, by task id). A session needs
   givers (skills strong on the niche, not among the failed ones, with a successful trajectory
   on it in the log) and recipients (skills weak on the niche that have no insight of that
   niche waiting, and none sent in its last `min_count` rollouts there); else it abstains and
   costs nothing. Sessions run concurrently; their results
   are applied in trigger order, so the outcome does not depend on which answered first.
4. each distilled insight is archived (or merged into its near-duplicate) and routed to every
   recipient that does not have it yet: it waits in `NicheState.pending` until that skill's
   next EditAdam proposal (`moscopt.extensions.niches.hook`). Each routing is a `transfer` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from moscopt.core.evidence import active
from moscopt.embedding import Embedder, cosine, make_embedder
from moscopt.extensions.niches.archive import Archive, insight_id
from moscopt.extensions.niches.assign import NicheAssigner, niche_key
from moscopt.extensions.niches.codream import Trajectory, dream
from moscopt.extensions.niches.competence import competence, observe
from moscopt.extensions.niches.lifecycle import update_streaks
from moscopt.extensions.niches.records import (
    NAME,
    HoldsNiches,
    Insight,
    LastOutcome,
    NicheState,
    Routed,
)
from moscopt.extensions.niches.routing import TransferRouting
from moscopt.optimizer.policies.edit_targets import SUCCESS
from moscopt.run.ledger import Dreamed, RolloutEvent, TransferEvent

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.config import Config
    from moscopt.optimizer.engine.context import Context

SUCCESSES_KEPT = 32  # successful rollouts remembered per niche (their log offsets)


@dataclass(frozen=True)
class Trigger:
    failed: RolloutEvent
    niche: str
    reason: str  # failure | disagreement


@dataclass(frozen=True)
class Session:
    trigger: Trigger
    givers: list[str]
    recipients: list[str]
    exemplars: list[tuple[str, RolloutEvent]]  # (giver, its successful rollout)
    lessons: list[str]


def niche_state(ctx: Context) -> NicheState:
    """The niche state of `ctx`'s niches extension, created empty on first use."""
    holder = ctx.extension(NAME)
    if not isinstance(holder, HoldsNiches):
        raise LookupError("the niches extension is not attached")
    if holder.niches is None:
        holder.niches = NicheState()
    return holder.niches


class NicheObserver:
    """See the module docstring. `show_gold`: whether CODREAM sees a failure's expected answer
    (a stream knows only the reward)."""

    def __init__(self, config: Config, *, show_gold: bool = True) -> None:
        self.config = config
        cfg = config.niches
        self.embedder: Embedder = make_embedder(
            cfg.embedding_model or config.evolution.embedding_model, numbers=True
        )
        self.routing = TransferRouting(cfg.margin, cfg.min_count)
        self.show_gold = show_gold

    def assigner(self, ctx: Context) -> NicheAssigner:
        cfg = self.config.niches
        key = None if cfg.source == "kmeans" else niche_key(ctx.benchmark.spec)
        assigner = NicheAssigner(
            key, niche_state(ctx), self.embedder, k=cfg.k, seed=ctx.config.seed
        )
        assigner.fit([*ctx.splits.train, *ctx.splits.val])
        return assigner

    def archive(self, ctx: Context) -> Archive:
        cfg = self.config.niches
        return Archive(niche_state(ctx), self.embedder, dedup=cfg.dedup, capacity=cfg.archive_size)

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        ns = niche_state(ctx)
        assigner = self.assigner(ctx)
        n = ctx.cursor.batch_rollouts
        offsets = ctx.cursor.rollouts[len(ctx.cursor.rollouts) - n :]
        events = ctx.rollouts(batch_only=True)
        pool = set(ctx.pool.names)
        for name in [r for r in ns.pending if r not in pool]:
            del ns.pending[name]
        triggers: list[Trigger] = []
        for offset, event in zip(offsets, events, strict=True):
            task = ctx.tasks.get(event.task_id)
            if task is None:
                continue
            niche = assigner.niche(task)
            observe(ns, niche, active(event), event.reward, self.config.niches.beta)
            prev = ns.last.get(task.id)
            ok = event.reward >= SUCCESS
            if not ok:
                again = prev is not None and prev.reward >= SUCCESS
                triggers.append(Trigger(event, niche, "disagreement" if again else "failure"))
            elif prev is not None and prev.reward < SUCCESS:
                (earlier,) = ctx.run.events.read_at([prev.offset])
                if isinstance(earlier, RolloutEvent):
                    triggers.append(Trigger(earlier, niche, "disagreement"))
            ns.last[task.id] = LastOutcome(reward=event.reward, offset=offset)
            if ok:
                kept = ns.successes.setdefault(niche, [])
                kept.append(offset)
                del kept[:-SUCCESSES_KEPT]
        batch_active = {n for e in events for n in active(e)}
        ratio = self.config.niches.lifecycle.prune_ratio
        update_streaks(ns, ctx.state.q, ctx.pool.names, batch_active, ratio)
        if self.config.niches.transfer and triggers:
            await self.transfer(ctx, triggers)

    # -- transfer --------------------------------------------------------------------------------

    async def transfer(self, ctx: Context, triggers: Sequence[Trigger]) -> None:
        cfg, ns = self.config.niches, niche_state(ctx)
        order = sorted(triggers, key=lambda t: (t.reason != "disagreement", t.failed.task_id))
        sessions: list[Session] = []
        for t in order:
            if len(sessions) >= cfg.max_sessions:
                break
            if any(s.trigger.niche == t.niche for s in sessions):
                continue
            session = self.plan(ctx, t)
            if session is not None:
                sessions.append(session)
        if not sessions:
            return
        dreams = await asyncio.gather(
            *(
                dream(
                    ctx.optimizer_lm,
                    niche=s.trigger.niche,
                    failure=self.trajectory(ctx, s.trigger.failed, gold=self.show_gold),
                    exemplars=[self.trajectory(ctx, e) for _, e in s.exemplars],
                    lessons=s.lessons,
                    max_insights=cfg.max_insights,
                )
                for s in sessions
            )
        )
        archive = self.archive(ctx)
        for s, d in zip(sessions, dreams, strict=True):
            ns.sessions += 1
            giver = s.exemplars[0][0]
            task = ctx.tasks[s.trigger.failed.task_id]
            stored_ids = []
            for found in d.insights:
                entry = Insight(
                    id=insight_id(found.scope, s.trigger.niche, found.text),
                    kind=found.scope,
                    niche=s.trigger.niche,
                    text=found.text,
                    givers=sorted({g for g, _ in s.exemplars}),
                    task_id=task.id,
                    key=task.prompt[:500],
                    step=ctx.state.step,
                )
                stored, _ = archive.add(entry)
                stored_ids.append(stored.id)
                for recipient in s.recipients:
                    if recipient not in stored.given:
                        self.route(ctx, stored, giver, recipient, s.trigger)
            ctx.record(
                Dreamed(
                    **ctx.where(),
                    niche=s.trigger.niche,
                    task_id=task.id,
                    trigger=s.trigger.reason,
                    givers=s.givers,
                    recipients=s.recipients,
                    insights=stored_ids,
                    error=d.error,
                )
            )

    def plan(self, ctx: Context, t: Trigger) -> Session | None:
        """The session for trigger `t`, or None when CODREAM abstains (see the docstring)."""
        ns, pool = niche_state(ctx), ctx.pool.names
        failed = active(t.failed)
        givers = [g for g in self.routing.givers(ns, t.niche, pool) if g not in failed]
        waiting = {
            name for name, queue in ns.pending.items() if any(r.niche == t.niche for r in queue)
        }
        min_count = self.config.niches.min_count
        recipients = [
            r
            for r in self.routing.recipients(ns, t.niche, pool)
            if r not in waiting
            and competence(ns, r, t.niche).count - ns.cooldown.get(f"{r}|{t.niche}", -min_count)
            >= min_count
        ]
        if not givers or not recipients:
            return None
        exemplars = self.exemplars(ctx, t, givers)
        if not exemplars:
            return None
        task = ctx.tasks[t.failed.task_id]
        lessons, meta = self.archive(ctx).retrieve(
            t.niche, task.prompt, self.config.niches.retrieve
        )
        return Session(t, givers, recipients, exemplars, [e.text for e in [*lessons, *meta]])

    def exemplars(
        self, ctx: Context, t: Trigger, givers: Sequence[str]
    ) -> list[tuple[str, RolloutEvent]]:
        """Successful rollouts on the niche in which a giver was active, the most similar
        tasks first (the failed task itself first of all); each tagged with its giver."""
        ns = niche_state(ctx)
        found: list[tuple[str, RolloutEvent]] = []
        for event in ctx.run.events.read_at(ns.successes.get(t.niche, [])):
            if not isinstance(event, RolloutEvent) or event.task_id not in ctx.tasks:
                continue
            mine = [g for g in givers if g in active(event)]
            if mine:
                found.append((mine[0], event))
        if not found:
            return []
        texts = [
            ctx.tasks[t.failed.task_id].prompt,
            *(ctx.tasks[e.task_id].prompt for _, e in found),
        ]
        vectors = self.embedder.encode_many(texts)
        rank = sorted(
            range(len(found)),
            key=lambda i: (
                found[i][1].task_id != t.failed.task_id,
                -cosine(vectors[0], vectors[i + 1]),
                -i,  # the most recent first on ties
            ),
        )
        return [found[i] for i in rank[: self.config.niches.exemplars]]

    def trajectory(self, ctx: Context, event: RolloutEvent, gold: bool = False) -> Trajectory:
        task = ctx.tasks[event.task_id]
        return Trajectory(
            skills=tuple(sorted(active(event))),
            task=task.prompt,
            response=event.response,
            reward=event.reward,
            gold=str(task.gold)[:200] if gold else None,
        )

    def route(self, ctx: Context, entry: Insight, giver: str, recipient: str, t: Trigger) -> None:
        ns = niche_state(ctx)
        entry.given.append(recipient)
        queue = ns.pending.setdefault(recipient, [])
        queue.append(Routed(insight=entry.id, giver=giver, niche=t.niche, step=ctx.state.step))
        channel = f"{giver}>{recipient}"
        ns.routed[channel] = ns.routed.get(channel, 0) + 1
        ns.cooldown[f"{recipient}|{t.niche}"] = competence(ns, recipient, t.niche).count
        ctx.record(
            TransferEvent(
                **ctx.where(),
                giver=giver,
                recipient=recipient,
                niche=t.niche,
                insight=entry.text,
                insight_id=entry.id,
                scope=entry.kind,
                trigger=t.reason,
                task_id=t.failed.task_id,
            )
        )
        while len(queue) > self.config.niches.pending_cap:
            dropped = queue.pop(0)
            if recipient in entry.given and dropped.insight == entry.id:
                entry.given.remove(recipient)
            ctx.record(
                TransferEvent(
                    **ctx.where(),
                    giver=dropped.giver,
                    recipient=recipient,
                    niche=dropped.niche,
                    insight="",
                    insight_id=dropped.insight,
                    outcome="dropped",
                )
            )
