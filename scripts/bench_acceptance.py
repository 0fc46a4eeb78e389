"""Acceptance policies on a loopback world: how often noise is accepted, how often a real rule
is, and what each decision costs in LLM calls.

The world (`moscopt.testing.worlds.RuleWorld` behind a `FakeServer`): the agent answers each
validation task of the offline benchmark correctly with probability p0, or p1 when a given rule
is in its skills, drawn from a hash of (task, sample index, rule present, system prompt), so a
reworded prompt redraws its answers as sampling at temperature > 0 does (`--noise rule` drops
the prompt from the hash: a no-op edit then gets exactly the incumbent's answers). Answers are
graded by the benchmark's grader. Every evaluation is a real call: `SkillAgent` and `run_tasks`
over an LM from `moscopt.lm.factory.build_lm`, counted by the server.

Scenarios, the same for both policies (same runs, same prompts, same draws):
- no-op: p0 = 0.5; each candidate is the incumbent plus a reworded sentence (a new one each
  time); the incumbent stays, so each decision is a fresh chance to accept noise;
- rule: p0 = 0.3, p1 = 0.7; each candidate is the incumbent plus the rule (and a new sentence,
  so each decision draws anew); the incumbent stays;
- no-op, chained: as no-op, but an accepted candidate becomes the incumbent, as in the trainer:
  later no-ops face a lucky incumbent, and the incumbent's score drifts up on noise alone.
Decisions come in runs of `--per-incumbent` that start from a fresh incumbent. Validation
rewards are cached per (pool, sample index) as in the trainer, so an incumbent's samples are
paid once, and its calls are spread over the decisions that share it.

Usage: python scripts/bench_acceptance.py [--decisions 400] [--per-incumbent 20] [--tasks 10]
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
from moscopt.optimizer.policies.acceptance import Acceptance, Rewards, Verdict, make_acceptance
from moscopt.routing.gate import FixedSkills
from moscopt.testing import FakeServer
from moscopt.testing.worlds import RuleWorld

RULE = "Before the final line, solve the task a second way and compare the two answers."
SKILLS = ("careful-computation", "answer-formatting")
# name: (p0, p1, the candidate carries the rule, an accepted candidate becomes the incumbent)
SCENARIOS = {
    "no-op": (0.5, 0.5, False, False),
    "rule": (0.3, 0.7, True, False),
    "no-op, chained": (0.5, 0.5, False, True),
}
POLICIES = ("strict", "paired")


@dataclass
class Validator:
    """Validation rewards of a pool per sample index, cached as the trainer caches them."""

    lm: LM
    benchmark: Benchmark
    tasks: Sequence[Task]
    cache: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)

    def rewards(self, pool: Pool, role: str) -> Rewards:
        async def at(s: int) -> list[float]:
            key = (pool.digest(), s)
            if key not in self.cache:
                router = FixedSkills(pool.names, "fixed")
                agent = SkillAgent(self.lm, self.benchmark, pool, router)
                rollouts = await run_tasks(agent, self.tasks, concurrency=len(self.tasks), sample=s)
                self.calls[role] += sum(r.calls for r in rollouts)
                self.cache[key] = [r.reward for r in rollouts]
            return self.cache[key]

        return at


def with_note(pool: Pool, note: str) -> Pool:
    first = pool.skills[0]
    return pool.replace(first.with_body(f"{first.body.rstrip()}\n\n{note}"))


async def run(
    policy: Acceptance, validator: Validator, scenario: str, run_index: int, decisions: int
) -> tuple[list[Verdict], float, float]:
    """One run of `decisions` decisions from a fresh incumbent; also the sample-0 scores of
    the first and the last incumbent."""
    _, _, rule, chained = SCENARIOS[scenario]
    base = Pool.load(seed_skills_dir())
    pool = Pool(skills=tuple(base.get(n) for n in SKILLS))
    incumbent = with_note(pool, f"Work in run {run_index} is checked line by line.")
    verdicts = []
    start = incumbent
    for j in range(decisions):
        reworded = f"Note {run_index}.{j}: read the question again before you answer."
        candidate = with_note(incumbent, f"{RULE} {reworded}" if rule else reworded)
        verdict = await policy.decide(
            validator.rewards(incumbent, "incumbent"), validator.rewards(candidate, "candidate")
        )
        verdicts.append(verdict)
        if verdict.accepted and chained:
            incumbent = candidate
    # sample 0 of both incumbents is cached by now: no call
    first = await validator.rewards(start, "incumbent")(0)
    last = await validator.rewards(incumbent, "incumbent")(0)
    return verdicts, sum(first) / len(first), sum(last) / len(last)


@dataclass
class Row:
    policy: str
    scenario: str
    verdicts: list[Verdict]
    drift: tuple[float, float]  # mean sample-0 score of the first and of the last incumbents
    per_run: int
    candidate_calls: int
    incumbent_calls: int
    server_calls: int

    def acceptance(self) -> tuple[float, float, float]:
        """Acceptance rate and its 95% interval, over runs: decisions that share an incumbent
        are not independent (a run whose incumbent drew low accepts more)."""
        d = self.per_run
        rates = [
            sum(v.accepted for v in self.verdicts[i : i + d]) / d
            for i in range(0, len(self.verdicts), d)
        ]
        _, low, high = mean_ci(rates)
        return sum(v.accepted for v in self.verdicts) / len(self.verdicts), low, high

    @property
    def calls(self) -> float:
        return (self.candidate_calls + self.incumbent_calls) / len(self.verdicts)


async def measure(args: argparse.Namespace) -> list[Row]:
    benchmark = get_benchmark("offline")
    tasks = benchmark.load(sizes={"val": max(24, args.tasks)})["val"][: args.tasks]
    rows = []
    runs = max(1, args.decisions // args.per_incumbent)
    for scenario, (p0, p1, _, _) in SCENARIOS.items():
        world = RuleWorld(tasks, RULE, p0, p1, base_seed=0, noise=args.noise)
        with FakeServer(responder=world) as server:
            overrides = {"model": "openai/fake", "api_base": server.url, "seed": 0}
            config = load_config(None, {**overrides, "llm.cache": False, "llm.concurrency": 64})
            for name in POLICIES:
                lm = build_lm(config, api_key="sk-fake")
                validator = Validator(lm, benchmark, tasks)
                policy = make_acceptance(name)  # type: ignore[arg-type]
                # one call first: concurrent first calls on a new LM race to open its session
                await lm.acomplete([{"role": "user", "content": "warm-up"}])
                before = server.count()
                per_run = await asyncio.gather(
                    *(run(policy, validator, scenario, r, args.per_incumbent) for r in range(runs))
                )
                lm.close()
                verdicts = [v for vs, _, _ in per_run for v in vs]
                drift = (
                    sum(f for _, f, _ in per_run) / runs,
                    sum(la for _, _, la in per_run) / runs,
                )
                c = validator.calls
                row = Row(
                    name,
                    scenario,
                    verdicts,
                    drift,
                    args.per_incumbent,
                    c["candidate"],
                    c["incumbent"],
                    server.count() - before,
                )
                assert row.server_calls == row.candidate_calls + row.incumbent_calls
                rows.append(row)
    return rows


def label(scenario: str) -> str:
    p0, p1, rule, _ = SCENARIOS[scenario]
    return f"{scenario}, p {p0} -> {p1}" if rule else f"{scenario}, p0={p0}"


def report(rows: list[Row], args: argparse.Namespace) -> None:
    strict = {r.scenario: r for r in rows if r.policy == "strict"}
    paired = {r.scenario: r for r in rows if r.policy == "paired"}
    print(
        f"{args.tasks} validation tasks, {args.per_incumbent} decisions per incumbent, "
        f"noise={args.noise}\n"
    )
    head = (
        f"{'policy':7} {'scenario':26} {'decisions':>9} {'accepted':>9} {'95% CI (runs)':>16} "
        f"{'samples':>7} {'cand + inc calls/decision':>26} {'vs strict':>9}"
    )
    print(head)
    print("-" * len(head))
    for r in sorted(rows, key=lambda r: list(SCENARIOS).index(r.scenario)):
        n = len(r.verdicts)
        mean, low, high = r.acceptance()
        samples = sum(v.samples for v in r.verdicts) / n
        calls = f"{r.candidate_calls / n:.1f} + {r.incumbent_calls / n:.1f} = {r.calls:.1f}"
        ratio = r.calls / strict[r.scenario].calls
        print(
            f"{r.policy:7} {label(r.scenario):26} {n:9d} {mean:9.1%} "
            f"{f'[{low:.1%}, {high:.1%}]':>16} {samples:7.2f} {calls:>26} {ratio:8.2f}x"
        )
    print()
    for r in (strict["no-op, chained"], paired["no-op, chained"]):
        before, after = r.drift
        print(
            f"{r.policy}, chained no-ops: the incumbent's sample-0 validation score went from "
            f"{before:.3f} to {after:.3f} on average (true success rate 0.5 throughout)"
        )
    for name, mine in (("strict", strict), ("paired", paired)):
        reasons = Counter(v.reason.split(" (")[0] for r in mine.values() for v in r.verdicts)
        print(f"{name} reasons: {dict(sorted(reasons.items()))}")
    both = ("no-op", "rule")
    n = sum(len(paired[k].verdicts) for k in both)
    ratio = sum(paired[k].calls for k in both) / sum(strict[k].calls for k in both)
    false_acc = sum(v.accepted for v in paired["no-op"].verdicts) / len(paired["no-op"].verdicts)
    rule_acc = sum(v.accepted for v in paired["rule"].verdicts) / len(paired["rule"].verdicts)
    print(
        f"\npaired targets: false acceptance {false_acc:.1%} (<= 5%); rule accepted "
        f"{rule_acc:.1%} (>= 90%); calls {ratio:.2f}x strict over the {n} no-op and rule "
        "decisions (<= 2x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=400, help="per policy and scenario")
    parser.add_argument("--per-incumbent", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--noise", choices=("prompt", "rule"), default="prompt")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = asyncio.run(measure(args))
    report(rows, args)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
