"""Acceptance on a loopback world: how often noise is accepted, how often a pool worse than the
margin is kept, how often real gains are found, and what each decision costs in LLM calls; in
training (a validation split) and in stream mode (a replay of the last tasks), on 10- and
20-task splits, for `strict` (the paper) and `paired` (the default).

The world (`moscopt.testing.worlds.RuleWorld` behind a `FakeServer`): the agent answers each
task correctly with probability p_without, or p_with when a given rule is in its skills, drawn
from a hash of (task, sample index, rule present, system prompt), so a reworded prompt redraws
its answers as sampling at temperature > 0 does. `--noise seed` draws from a hash of (task,
sample index) only, common to every prompt: the extreme of a server that honours the shared
provider seed and samples the same tokens whatever the wording (what sharing the seed can buy
at best; a changed prompt does change the sampled tokens of a real model). Runs then differ by
their sample indices (run r asks samples from 1000 r). Answers are graded by the benchmark's
grader.
Every evaluation is a real call: `SkillAgent` and `run_tasks` over an LM from
`moscopt.lm.factory.build_lm`, counted by the server.

Scenarios (incumbent -> candidate success rate; each candidate carries a new reworded sentence,
so each decision draws anew; the incumbent stays):
- edits, decided with `direction="better"`: a no-op (0.5 -> 0.5), +0.1 (0.5 -> 0.6) and +0.2
  (0.5 -> 0.7);
- changes that buy something other than score (evolution, gate restoration, lifecycle), decided
  with `direction="non_inferior"` (margin `optimizer.margin`, 0.1): a pool worse by 0.2 (0.5 ->
  0.3, beyond the margin), one worse by exactly the margin (0.5 -> 0.4) and a harmless change
  (0.5 -> 0.5: how often evolution is still kept, its cost).
Decisions come in runs of `--per-incumbent` that start from a fresh incumbent; validation
rewards are cached per (pool, sample index) as in the trainer, so an incumbent's samples are
paid once and its calls are spread over the decisions that share it.

Stream mode: the split is the replay window (the last tasks the stream answered). An edit is
made only after a chunk (its last `--chunk` tasks) in which the live pool failed a task, and the
live answers are sample 0 of the same prompts. `stream` decides from sample 1, as the stream does
now; `stream-old` from sample 0 (the incumbent's first sample read back from the live answers,
as before issue 23; not run by default: in this world its figures equal training's, since a
chunk of 4 tasks at 0.5 has a failure 15 times in 16). Runs whose live chunk had no failure make
no edit and are not counted.

More evidence per call (issue 23, item 3): `--pool N` holds N validation tasks for the
decisions (the split of `optimizer.val_look` = the `--tasks` size): a decision's first look is
the first `--tasks` of them (what `strict` sees), each further look the next tasks not yet seen
(`moscopt.optimizer.engine.validation.look_tasks`). `--consistency c`: a prompt gives a task its
usual answer on a share c of the samples (a model at a low temperature), so that repeats of a
task carry less than new tasks. `--parts m`: graded rewards, m parts per answer (partial credit,
`RuleWorld.parts`, scored by `moscopt.testing.worlds.grade_parts`), `--agreement a` how much
the parts of one answer stand or fall together. The pool is used in train mode only.

The task is the unit (issue 37): every decision tells the test which task each reward comes
from, so repeats of a task count once however many samples are drawn.

Stream mode with memorising edits (`--memorising N`): N real streams (`moscopt stream`'s engine,
`moscopt.testing.memorising`) of `--stream-tasks` additions in a world where every edit only
memorises the answers of the tasks the proposer was shown: the share of edits accepted, with
its 95% interval (decisions replay held-out tasks the proposer never saw, so none should pass).

Usage: python scripts/bench_acceptance.py [--decisions 200] [--per-incumbent 20]
       [--tasks 10,20] [--modes train,stream,stream-old] [--policies strict,paired]
       [--noise prompt|seed] [--pool N] [--consistency C] [--parts M]
       [--memorising N [--stream-tasks 32]]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from moscopt.agent.evaluate import run_tasks
from moscopt.agent.skill_agent import SkillAgent
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import load_config
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.core.stats import mean_ci
from moscopt.lm.base import LM
from moscopt.lm.factory import build_lm
from moscopt.optimizer.engine.validation import by_sample
from moscopt.optimizer.policies.acceptance import (
    Acceptance,
    Direction,
    Rewards,
    Verdict,
    make_acceptance,
)
from moscopt.optimizer.policies.blocks import look_tasks
from moscopt.routing.gate import FixedSkills
from moscopt.testing import FakeServer
from moscopt.testing.worlds import RuleWorld

RULE = "Before the final line, solve the task a second way and compare the two answers."
SKILLS = ("careful-computation", "answer-formatting")
MARGIN = 0.1
# name: (incumbent rate, candidate rate, direction)
SCENARIOS: dict[str, tuple[float, float, Direction]] = {
    "no-op edit": (0.5, 0.5, "better"),
    "+0.1 edit": (0.5, 0.6, "better"),
    "+0.2 edit": (0.5, 0.7, "better"),
    "worse by 0.2 (kept?)": (0.5, 0.3, "non_inferior"),
    "worse by 0.1 (kept?)": (0.5, 0.4, "non_inferior"),
    "harmless change (kept?)": (0.5, 0.5, "non_inferior"),
}
MODES = {"train": 0, "stream": 1, "stream-old": 0}  # mode: the first sample a decision asks


@dataclass
class Validator:
    """Validation rewards of a pool per sample index, cached as the trainer caches them."""

    lm: LM
    benchmark: Benchmark
    tasks: Sequence[Task]  # the held-out pool decisions draw from
    look: int  # tasks per look
    first: int = 0  # the LM sample of a decision's sample 0
    offsets: dict[str, int] = field(default_factory=dict)  # per pool (--noise seed: per run)
    cache: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)

    async def at(self, pool: Pool, look: int, role: str, first: int) -> list[float]:
        """The rewards of look `look`, its sample indices shifted by `first`."""
        first += self.offsets.get(pool.digest(), 0)
        key = (pool.digest(), look, first)
        if key not in self.cache:
            agent = SkillAgent(self.lm, self.benchmark, pool, FixedSkills(pool.names, "fixed"))
            rewards = []
            for s, indices in by_sample(look_tasks(len(self.tasks), self.look, look)):
                chosen = [self.tasks[i] for i in indices]
                rollouts = await run_tasks(agent, chosen, concurrency=len(chosen), sample=first + s)
                self.calls[role] += sum(r.calls for r in rollouts)
                rewards += [r.reward for r in rollouts]
            self.cache[key] = rewards
        return self.cache[key]

    def keys(self, look: int) -> list[int]:
        """The task of each reward of look `look` (the tests take the task as the unit)."""
        return [i for i, _ in look_tasks(len(self.tasks), self.look, look)]

    def rewards(self, pool: Pool, role: str) -> Rewards:
        async def of(s: int) -> list[float]:
            return await self.at(pool, s, role, self.first)

        return of


def with_note(pool: Pool, note: str) -> Pool:
    first = pool.skills[0]
    return pool.replace(first.with_body(f"{first.body.rstrip()}\n\n{note}"))


def pools(scenario: str, run_index: int, j: int) -> tuple[Pool, Pool]:
    """(incumbent, candidate) of decision j of a run: the rule rides with the better rate."""
    p_inc, p_cand, _ = SCENARIOS[scenario]
    base = Pool.load(seed_skills_dir())
    pool = Pool(skills=tuple(base.get(n) for n in SKILLS))
    note = f"Work in run {run_index} is checked line by line."
    rule_inc, rule_cand = p_inc > p_cand, p_cand > p_inc
    incumbent = with_note(pool, f"{RULE} {note}" if rule_inc else note)
    reworded = f"Note {run_index}.{j}: read the question again before you answer."
    candidate = with_note(pool, f"{RULE if rule_cand else ''} {note} {reworded}".strip())
    return incumbent, candidate


async def run(
    policy: Acceptance,
    validator: Validator,
    scenario: str,
    run_index: int,
    decisions: int,
    stream_chunk: int,
    seed_runs: bool = False,
) -> list[Verdict] | None:
    """One run of `decisions` decisions against one incumbent (None: a stream run whose live
    chunk had no failure, so no edit was made)."""
    direction = SCENARIOS[scenario][2]
    incumbent, _ = pools(scenario, run_index, 0)
    if seed_runs:
        validator.offsets[incumbent.digest()] = 1000 * run_index
    if stream_chunk:
        live = await validator.at(incumbent, 0, "incumbent", 0)  # the stream's live answers
        if min(live[-stream_chunk:]) >= 1.0:
            return None
    verdicts = []
    for j in range(decisions):
        _, candidate = pools(scenario, run_index, j)
        if seed_runs:
            validator.offsets[candidate.digest()] = 1000 * run_index
        verdict = await policy.decide(
            validator.rewards(incumbent, "incumbent"),
            validator.rewards(candidate, "candidate"),
            direction=direction,
            tasks=validator.keys,
        )
        verdicts.append(verdict)
    return verdicts


@dataclass
class Row:
    tasks: int
    mode: str
    policy: str
    scenario: str
    verdicts: list[Verdict]
    per_run: int
    candidate_calls: int
    incumbent_calls: int
    runs_skipped: int = 0

    def acceptance(self) -> tuple[float, float, float]:
        """Acceptance rate and its 95% interval, over runs: decisions that share an incumbent
        are not independent (a run whose incumbent drew low accepts more)."""
        d = self.per_run
        rates = [
            sum(v.accepted for v in self.verdicts[i : i + d]) / d
            for i in range(0, len(self.verdicts), d)
        ]
        _, low, high = mean_ci(rates)
        return sum(v.accepted for v in self.verdicts) / max(1, len(self.verdicts)), low, high

    @property
    def calls(self) -> float:
        return (self.candidate_calls + self.incumbent_calls) / max(1, len(self.verdicts))


def world_benchmark(parts: int) -> Benchmark:
    """The offline benchmark, graded by `grade_parts` when answers have parts."""
    benchmark = get_benchmark("offline")
    if parts == 1:
        return benchmark
    graded = {"grader": "custom", "grader_entry": "moscopt.testing.worlds:grade_parts"}
    return Benchmark(benchmark.spec.model_copy(update=graded))


async def measure(args: argparse.Namespace) -> list[Row]:
    benchmark = world_benchmark(args.parts)
    every = benchmark.load(sizes={"val": max(24, *args.tasks)})["val"]
    more = benchmark.load(sizes={"val": max(24, *args.tasks) + args.pool})["val"]
    ids = {t.id for t in every}
    extra = [t for t in more if t.id not in ids]  # the pool: beyond the split's own tasks
    rows = []
    runs = max(1, args.decisions // args.per_incumbent)
    for tasks_n in args.tasks:
        tasks = every[:tasks_n]
        held = [*tasks, *extra[: max(0, args.pool - tasks_n)]]
        for scenario, (p_inc, p_cand, direction) in SCENARIOS.items():
            p_without, p_with = min(p_inc, p_cand), max(p_inc, p_cand)
            world = RuleWorld(
                held, RULE, p_without, p_with, base_seed=0, noise=args.noise,
                consistency=args.consistency, parts=args.parts, agreement=args.agreement,
            )  # fmt: skip
            with FakeServer(responder=world) as server:
                overrides = {"model": "openai/fake", "api_base": server.url, "seed": 0}
                config = load_config(None, {**overrides, "llm.cache": False, "llm.concurrency": 64})
                for mode in args.modes:
                    if mode != "train" and direction != "better":
                        continue  # the stream decides edits (its lifecycle: as in training)
                    for name in args.policies:
                        lm = build_lm(config, api_key="sk-fake")
                        drawn = held if mode == "train" else tasks
                        validator = Validator(lm, benchmark, drawn, tasks_n, first=MODES[mode])
                        policy = make_acceptance(name, margin=MARGIN)
                        await lm.acomplete([{"role": "user", "content": "warm-up"}])
                        before = server.count()
                        chunk = args.chunk if mode != "train" else 0
                        per_run = await asyncio.gather(
                            *(
                                run(
                                    policy,
                                    validator,
                                    scenario,
                                    r,
                                    args.per_incumbent,
                                    chunk,
                                    args.noise == "seed",
                                )
                                for r in range(runs)
                            )
                        )
                        lm.close()
                        made = [vs for vs in per_run if vs is not None]
                        c = validator.calls
                        row = Row(
                            tasks_n,
                            mode,
                            name,
                            scenario,
                            [v for vs in made for v in vs],
                            args.per_incumbent,
                            c["candidate"],
                            c["incumbent"],
                            runs - len(made),
                        )
                        assert server.count() - before == row.candidate_calls + row.incumbent_calls
                        rows.append(row)
    return rows


def report(rows: list[Row], args: argparse.Namespace) -> None:
    key = {(r.tasks, r.mode, r.scenario, r.policy): r for r in rows}
    held = f"pool of {args.pool} held-out tasks" if args.pool else "no pool: looks repeat tasks"
    print(
        f"{args.per_incumbent} decisions per incumbent, {args.decisions} per row, margin {MARGIN},"
        f" stream chunk {args.chunk}, noise={args.noise}, consistency {args.consistency}, "
        f"{args.parts} part(s) per answer (agreement {args.agreement}), {held}; "
        "ratio = calls per decision / strict's\n"
    )
    head = (
        f"{'tasks':>5} {'mode':11} {'policy':7} {'scenario':24} {'n':>5} {'kept':>7} "
        f"{'95% CI (runs)':>16} {'samples':>7} {'calls/dec':>9} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        n = len(r.verdicts)
        if not n:
            continue
        mean, low, high = r.acceptance()
        samples = sum(v.samples for v in r.verdicts) / n
        strict = key.get((r.tasks, r.mode, r.scenario, "strict"))
        ratio = f"{r.calls / strict.calls:5.2f}x" if strict and strict.calls else "     -"
        print(
            f"{r.tasks:5d} {r.mode:11} {r.policy:7} {r.scenario:24} {n:5d} {mean:7.1%} "
            f"{f'[{low:.1%}, {high:.1%}]':>16} {samples:7.2f} {r.calls:9.1f} {ratio}"
        )
    skipped = [r for r in rows if r.runs_skipped]
    for r in skipped:
        print(f"({r.tasks} tasks, {r.mode}, {r.policy}, {r.scenario}: {r.runs_skipped} runs had "
              "no live failure, hence no edit)")  # fmt: skip
    print()
    for t in args.tasks:
        for mode in args.modes:
            got = {s: key.get((t, mode, s, "paired")) for s in SCENARIOS}
            edits = [got[s] for s in ("no-op edit", "+0.1 edit", "+0.2 edit")]
            if not all(e is not None and e.verdicts for e in edits):
                continue
            assert edits[0] is not None and edits[1] is not None and edits[2] is not None
            strict_calls = [key.get((t, mode, s, "strict")) for s in SCENARIOS]
            ratios = [
                p.calls / s.calls
                for p, s in zip(got.values(), strict_calls, strict=True)
                if p is not None and s is not None and s.calls
            ]
            parts = [
                f"no-op accepted {edits[0].acceptance()[0]:.1%}",
                f"+0.1 {edits[1].acceptance()[0]:.1%}",
                f"+0.2 {edits[2].acceptance()[0]:.1%}",
            ]
            worse = got.get("worse by 0.2 (kept?)")
            if worse is not None and worse.verdicts:
                parts.append(f"a pool worse by 0.2 kept {worse.acceptance()[0]:.1%}")
            if ratios:
                parts.append(f"calls {min(ratios):.2f}-{max(ratios):.2f}x strict")
            print(f"paired, {t} tasks, {mode}: " + ", ".join(parts))


def memorising(streams: int, tasks: int) -> None:
    """Stream mode with memorising edits: edits accepted of those decided, with a Wilson
    interval over the edits (and the streams' spread)."""
    import tempfile
    from pathlib import Path

    from moscopt.testing.memorising import memorising_stream

    accepted = decided = 0
    per_stream = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(streams):
            a, d = memorising_stream(Path(tmp) / f"s{seed}", seed_skills_dir(), n=tasks, seed=seed)
            accepted, decided = accepted + a, decided + d
            per_stream.append((a, d))
    rate, low, high = mean_ci([1.0] * accepted + [0.0] * (decided - accepted))
    print(
        f"stream, memorising edits ({streams} streams of {tasks} tasks, window 8, one task in 4 "
        f"held out): {accepted} of {decided} edits accepted, {rate:.1%} [95% {low:.1%}, "
        f"{high:.1%}] (per stream: {', '.join(f'{a}/{d}' for a, d in per_stream)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=200, help="per row")
    parser.add_argument("--per-incumbent", type=int, default=20)
    parser.add_argument("--tasks", default="10,20", help="split sizes, comma-separated")
    parser.add_argument("--modes", default="train,stream", help="train, stream, stream-old")
    parser.add_argument("--policies", default="strict,paired", help="strict and/or paired")
    parser.add_argument("--chunk", type=int, default=4, help="stream: live tasks per chunk")
    parser.add_argument("--noise", choices=("prompt", "seed"), default="prompt")
    parser.add_argument("--pool", type=int, default=0, help="held-out tasks (train mode)")
    parser.add_argument("--consistency", type=float, default=0.0, help="usual answers' share")
    parser.add_argument("--parts", type=int, default=1, help="parts per answer (graded)")
    parser.add_argument("--agreement", type=float, default=0.5, help="graded: parts' agreement")
    parser.add_argument("--memorising", type=int, default=0, help="memorising streams")
    parser.add_argument("--stream-tasks", type=int, default=32, help="tasks per stream")
    args = parser.parse_args()
    args.tasks = [int(t) for t in args.tasks.split(",")]
    args.modes = args.modes.split(",")
    args.policies = args.policies.split(",")
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {unknown}: use {', '.join(MODES)}")
    started = time.perf_counter()
    if args.memorising:
        memorising(args.memorising, args.stream_tasks)
    else:
        rows = asyncio.run(measure(args))
        report(rows, args)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
