"""The certificate at the end of a run: did training help, on tasks it never decided on?

The final pool (routed with the run's final statistics and memory, as `moscopt eval --run`
routes it) and the pool the run started from (its `train_start` checkpoint, routed as at the
start: no statistics, no memory, a router that has learned nothing: `Context.start_router`) are
rolled out on the same held-out tasks with the same sample indices
(`training.certificate_samples` of them; the provider seed is shared, so the two are paired), and
compared per task: d_t = final - seed, averaged over the samples. The held-out tasks are the
test split, else the validation tasks no decision used (`optimizer.p_val` < 1); with neither,
or when the run kept the pool it started from, the certificate is `skipped` and says why.

The interval is a 95% confidence interval for the mean difference over the tasks the held-out
ones stand for, by betting (`moscopt.optimizer.policies.interval`: valid for any differences
within [-1, 1], ties included, and never of zero width). The verdict reads it: `better` when it
lies above 0, `worse` when below, else `no detectable difference`. `detectable` is the smallest
mean gain these tasks could ever show (every changed task moved from 0 to 1, none the other way;
None: none, too few tasks). Only a `worse` verdict advises the seed pool; when nothing is
detectable the line says the split is too small to tell. Unless the verdict is `better`, the
seed pool is written to `<run>/exports/seed`.

The certificate is a `certificate` event, recorded once per final pool (a resumed run that ends
again with the same pool does not pay twice; the LM cache makes a repeat free anyway).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from moscopt.agent.evaluate import run_tasks
from moscopt.lm.batch import can_wait, wave_concurrency
from moscopt.optimizer.evolve import gather_all
from moscopt.optimizer.policies.interval import mean_interval, p_value
from moscopt.run.ledger import CertificateEvent, TrainStart

if TYPE_CHECKING:
    from moscopt.benchmarks import Task
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context
    from moscopt.routing.gate import Router
    from moscopt.run.rundir import RunDir

ALPHA = 0.05  # two-sided
SEED_EXPORT = "seed"  # <run>/exports/seed: the starting pool, when training did not beat it


def held_out(ctx: Context) -> tuple[str, list[Task]]:
    """The tasks the certificate uses and their name ("" and none when there are none)."""
    if ctx.splits.test:
        return "test", list(ctx.splits.test)
    unused = list(ctx.splits.val[len(ctx.val_tasks) :])
    return ("val (held out)", unused) if unused else ("", [])


async def certify(ctx: Context) -> CertificateEvent:
    """Compare the final pool with the starting one (module docstring); record and return the
    `certificate` event (an existing one for this final pool is returned as it is)."""
    final = ctx.pool
    done = latest(ctx.run, ctx.state)
    if done is not None and done.final_pool == final.digest()[:12]:
        return done
    samples = max(1, ctx.config.training.certificate_samples)  # asked for: at least one
    start = next((e for e in ctx.run.read_events(ctx.state, {"train_start"})), None)
    split, tasks = held_out(ctx)
    event: CertificateEvent
    if not isinstance(start, TrainStart) or start.checkpoint is None:
        event = CertificateEvent(verdict="skipped", reason="no train_start checkpoint")
    elif start.pool == final.digest()[:12]:
        event = CertificateEvent(
            verdict="skipped", reason="the run kept the pool it started from: nothing to compare"
        )
    elif not tasks:
        event = CertificateEvent(
            verdict="skipped",
            reason="no held-out tasks: the test split is empty and every validation task is "
            "used for decisions (lower optimizer.p_val to hold some out)",
        )
    else:
        seed = ctx.run.load_checkpoint(start.checkpoint)
        diffs, seed_total, final_total = [0.0] * len(tasks), 0.0, 0.0
        both = (
            (final, ctx.router(final, ctx.live_stats()), True),
            (seed, ctx.start_router(seed), False),  # as at the start: nothing learned yet
        )
        runs = await gather_all(  # every pool and sample at once: none depends on another
            (
                _rewards(ctx, pool, router, tasks, s, memory=memory)
                for s in range(samples)
                for pool, router, memory in both
            ),
            overlap=ctx.config.optimizer.overlap,
        )
        for s in range(samples):
            mine, theirs = runs[2 * s], runs[2 * s + 1]
            for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
                diffs[i] += (a - b) / samples
            final_total, seed_total = final_total + sum(mine), seed_total + sum(theirs)
        event = _verdict(diffs, samples)
        event = event.model_copy(
            update={
                "split": split,
                "seed_pool": seed.digest()[:12],
                "final_pool": final.digest()[:12],
                "seed_score": seed_total / (samples * len(tasks)),
                "final_score": final_total / (samples * len(tasks)),
                "seed_checkpoint": start.checkpoint,
            }
        )
        if event.verdict != "better":
            seed.dump(ctx.run.exports_dir / SEED_EXPORT)
    if event.verdict == "skipped":
        event = event.model_copy(update={"final_pool": final.digest()[:12]})
    ctx.record(event)
    ctx.save()
    return event


def _verdict(diffs: list[float], samples: int) -> CertificateEvent:
    low, high = mean_interval(diffs, ALPHA)
    verdict = "better" if low > 0 else "worse" if high < 0 else "no detectable difference"
    return CertificateEvent(
        verdict=verdict,
        tasks=len(diffs),
        samples=samples,
        mean_diff=math.fsum(diffs) / len(diffs),
        low=low,
        high=high,
        p_value=p_value(diffs),
        detectable=detectable(len(diffs)),
    )


def detectable(tasks: int) -> float | None:
    """The smallest mean gain `tasks` held-out tasks could show (the best case: every changed
    task gained 1, none lost); None when not even a gain on every task would."""

    def shows(changed: int) -> bool:
        return mean_interval([1.0] * changed + [0.0] * (tasks - changed), ALPHA)[0] > 0

    if tasks < 1 or not shows(tasks):
        return None
    low, high = 0, tasks  # shows(high); more changed tasks never show less: bisect
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if shows(mid) else (mid, high)
    return high / tasks


async def _rewards(
    ctx: Context, pool: Pool, router: Router, tasks: list[Task], sample: int, *, memory: bool
) -> list[float]:
    from moscopt.agent.build import agent_for

    agent = agent_for(
        ctx.agent_lm,
        ctx.benchmark,
        pool,
        router,
        ctx.config,
        **(ctx.agent_options() if memory else {}),
    )
    with can_wait(ctx.config.llm.batch):
        rollouts = await run_tasks(
            agent, tasks, concurrency=wave_concurrency(ctx.config.llm), sample=sample
        )
    return [r.reward for r in rollouts]


def latest(run: RunDir, state: object | None = None) -> CertificateEvent | None:
    """The run's last certificate, if any."""
    events = run.read_events(state, {"certificate"})  # type: ignore[arg-type]
    found = [e for e in events if isinstance(e, CertificateEvent)]
    return found[-1] if found else None


def line(event: CertificateEvent, run: RunDir | None = None) -> str:
    """The one line a user reads: the verdict, its evidence and, unless better, what to do."""
    if event.verdict == "skipped":
        return f"certificate: skipped ({event.reason})"
    assert event.mean_diff is not None and event.low is not None and event.high is not None
    where = f"{event.tasks} {event.split} tasks x {event.samples} sample(s), paired"
    scores = f"seed {event.seed_score:.3f} -> final {event.final_score:.3f}"
    evidence = (
        f"{scores}, difference {event.mean_diff:+.3f} "
        f"[95% {event.low:+.3f}, {event.high:+.3f}], {where}"
    )
    text = f"certificate: {event.verdict.upper()} than the seed pool ({evidence})"
    seed = f"{run.exports_dir / SEED_EXPORT}" if run is not None else "<run>/exports/seed"
    if event.verdict == "no detectable difference":
        text = f"certificate: NO DETECTABLE DIFFERENCE from the seed pool ({evidence})"
        if event.detectable is None:
            text += (
                f"; {event.tasks} held-out tasks are too few to tell the pools apart at 95% "
                "(more test tasks, or training.certificate_samples, are needed)"
            )
        else:
            text += (
                f"; these tasks can show a gain of {event.detectable:.3f} or more at best, so "
                "either pool may be the better one (more test tasks narrow the interval)"
            )
        text += f". The starting pool is in {seed}, to compare (moscopt eval --skills {seed})"
    elif event.verdict == "worse":
        text += (
            ". Training made the pool worse on held-out tasks: deploy the pool it started "
            f"from, in {seed} (or evaluate it: moscopt eval --skills {seed})"
        )
    return text
