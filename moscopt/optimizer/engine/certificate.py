"""The certificate at the end of a run: did training help, on tasks it never decided on?

The final pool (routed with the run's final statistics and memory, as `moscopt eval --run`
routes it) and the pool the run started from (its `train_start` checkpoint, routed as at the
start: no statistics, no memory) are rolled out on the same held-out tasks with the same sample
indices (`training.certificate_samples` of them; the provider seed is shared, so the two are
paired), and compared per task: d_t = final - seed, averaged over the samples. The held-out
tasks are the test split, else the validation tasks no decision used (`optimizer.p_val` < 1);
with neither, or when the run kept the pool it started from, the certificate is `skipped` and
says why.

The verdict is an exact two-sided test (alpha 0.05, 0.025 a side) of the sign flips of the
per-task differences, `SequentialSignFlip` with one look (tasks are the independent units):
`better` when the final pool is ahead beyond chance, `worse` when it is behind, else `no
detectable difference`; the interval is the mean difference plus or minus the critical distance,
so `better` iff low > 0 and `worse` iff high < 0. Unless the verdict is `better`, the seed pool
is written to `<run>/exports/seed` and the line says how to deploy it.

The certificate is a `certificate` event, recorded once per final pool (a resumed run that ends
again with the same pool does not pay twice; the LM cache makes a repeat free anyway).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from moscopt.agent.evaluate import run_tasks
from moscopt.lm.batch import can_wait, wave_concurrency
from moscopt.optimizer.evolve import gather_all
from moscopt.optimizer.policies.acceptance import SequentialSignFlip
from moscopt.routing.gate import GateStats
from moscopt.run.ledger import CertificateEvent, TrainStart

if TYPE_CHECKING:
    from moscopt.benchmarks import Task
    from moscopt.core.skills import Pool
    from moscopt.optimizer.engine.context import Context
    from moscopt.run.rundir import RunDir

ALPHA = 0.05  # two-sided
MIN_TASKS = 6  # the fewest tasks whose sign flips can reach 0.025 a side (2**-6 < 0.025)
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
        fresh = GateStats(c_min=ctx.config.credit.c_min)  # the start: no statistics yet
        diffs, seed_total, final_total = [0.0] * len(tasks), 0.0, 0.0
        both = ((final, ctx.live_stats(), True), (seed, fresh, False))
        runs = await gather_all(  # every pool and sample at once: none depends on another
            (
                _rewards(ctx, pool, stats, tasks, s, memory=memory)
                for s in range(samples)
                for pool, stats, memory in both
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
    up = SequentialSignFlip(ALPHA / 2, 1).look(diffs)
    down = SequentialSignFlip(ALPHA / 2, 1).look([-d for d in diffs])
    mean = math.fsum(diffs) / len(diffs)
    verdict = (
        "better"
        if up.outcome == "crossed"
        else "worse"
        if down.outcome == "crossed"
        else "no detectable difference"
    )
    return CertificateEvent(
        verdict=verdict,
        tasks=len(diffs),
        samples=samples,
        mean_diff=mean,
        low=max(-1.0, up.mean - up.critical),
        high=min(1.0, up.mean + up.critical),
        p_value=min(1.0, 2 * min(up.p_value, down.p_value)),
        detectable=up.critical,
    )


async def _rewards(
    ctx: Context, pool: Pool, stats: GateStats, tasks: list[Task], sample: int, *, memory: bool
) -> list[float]:
    from moscopt.agent.build import agent_for

    agent = agent_for(
        ctx.agent_lm,
        ctx.benchmark,
        pool,
        ctx.router(pool, stats),
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
    if event.verdict == "no detectable difference":
        text = f"certificate: NO DETECTABLE DIFFERENCE from the seed pool ({evidence})"
        if event.tasks < MIN_TASKS:
            text += (
                f"; {event.tasks} held-out tasks can never show a difference at 95% (the exact "
                f"test needs {MIN_TASKS} or more)"
            )
        elif event.detectable:
            text += (
                f"; differences within {event.detectable:.3f} are not detectable here (more "
                "test tasks or training.certificate_samples narrow it)"
            )
    if event.verdict != "better":
        seed = f"{run.exports_dir / SEED_EXPORT}" if run is not None else "<run>/exports/seed"
        text += (
            ". Training did not show a gain over the pool it started from on held-out tasks: "
            f"that pool is in {seed} (deploy it, or evaluate it: moscopt eval --skills {seed})"
        )
    return text
