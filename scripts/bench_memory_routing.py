"""Full-history vs query-only vs gated-memory step routing, with and without halting, on a
loopback multi-step world (the right answer appears at a step that varies per task; extra
steps cost calls).

    python scripts/bench_memory_routing.py [--train 60] [--test 120] [--seed 0] [--out FILE]

The agent and its LLM gate talk over HTTP to `moscopt.testing.fake_server.FakeServer` playing
`moscopt.testing.multistep_world.MultiStepWorld` (prompt tokens are the server's word counts).
Step-level gating, K = 1, T = 4, no tools. First the gates and the halting controller are
fitted (`moscopt.extensions.memory.training.learn`) on rollouts of the training tasks run to T with
the memory and without halting; then every configuration runs the test tasks:

- default harness: the router reads the last step (`memory.route_on: progress`), the agent the
  transcript, no memory, no halting;
- full history: the router and the agent read the whole transcript;
- query only: the router reads the task alone (the agent still reads the transcript);
- gated memory: the router and the agent read the task plus the retrieval gate's records;
- each with halting (the fitted controller; with `--rule` also the untrained agreement rule).

Prints accuracy, LLM calls per task (gate and agent) and prompt tokens per task, and the
targets: gated memory with halting against full history without it (>= 25% fewer calls, >= 40%
fewer prompt tokens, accuracy within 1 point), and against the default harness (>= 25% fewer
calls, no more prompt tokens, accuracy unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass, replace
from typing import Any

from moscopt.agent.harness import Rollout
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import LLMConfig, load_config
from moscopt.extensions.memory.params import MemoryState
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.extensions.memory.training import describe, learn
from moscopt.lm.client import LiteLLMClient
from moscopt.testing.fake_server import FakeServer
from moscopt.testing.multistep_world import MultiStepWorld

MAX_STEPS = 4


@dataclass(frozen=True)
class Row:
    name: str
    accuracy: float
    calls: float
    prompt_tokens: float
    halted: float  # share of tasks stopped by the halting controller


async def run_all(
    lm: LiteLLMClient,
    world: MultiStepWorld,
    bench: Benchmark,
    tasks: list[Task],
    settings: MemorySettings,
    embedding: str,
) -> list[Rollout]:
    agent = world.skill_agent(lm, bench, settings, max_steps=MAX_STEPS, embedding_model=embedding)
    slots = asyncio.Semaphore(16)

    async def one(task: Task) -> Rollout:
        async with slots:
            return await agent.run(task)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def row(name: str, rollouts: list[Rollout]) -> Row:
    n = max(1, len(rollouts))
    halted = sum((r.extra.get("memory") or {}).get("halted_at") is not None for r in rollouts)
    return Row(
        name,
        sum(r.reward for r in rollouts) / n,
        sum(r.calls for r in rollouts) / n,
        sum(r.prompt_tokens for r in rollouts) / n,
        halted / n,
    )


def configurations(learned: MemoryState, rule: bool) -> list[tuple[str, MemorySettings]]:
    config = load_config(None, {"memory.enabled": True, "memory.halting.enabled": True})
    fitted = MemorySettings.from_config(config.memory, learned)
    halting = dict(halting=True, halting_model=fitted.halting_model)
    gated = replace(fitted, halting=False, ask_confidence=False)
    out = [
        ("default harness", MemorySettings()),
        ("full history", MemorySettings(route_on="full")),
        ("full history + halting", MemorySettings(route_on="full", **halting)),  # type: ignore[arg-type]
        ("query only", MemorySettings(route_on="query")),
        ("query only + halting", MemorySettings(route_on="query", **halting)),  # type: ignore[arg-type]
        ("gated memory", gated),
        ("gated memory + halting", replace(gated, **halting)),  # type: ignore[arg-type]
    ]
    if rule:
        rule_only = replace(gated, halting=True, halting_model=None)
        out.append(("gated memory + agreement rule", rule_only))
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    world = MultiStepWorld(n_tasks=args.train + args.test, seed=args.seed)
    tasks = world.tasks()
    train, test = tasks[: args.train], tasks[args.train :]
    bench = get_benchmark("offline")  # its exact grader reads the FINAL ANSWER line
    with FakeServer(responder=world.responder) as server:
        lm = LiteLLMClient("openai/world", api_base=server.url, llm=LLMConfig(concurrency=16))
        try:
            explore = MemorySettings(context=True, route_on="memory")  # to T: uncensored
            train_rollouts = await run_all(lm, world, bench, train, explore, args.embedding)
            by_id = {t.id: t for t in train}
            config = load_config(None, {"memory.enabled": True, "memory.halting.enabled": True})
            learned = learn(
                None,
                train_rollouts,
                lambda tid, text: bench.grade(by_id[tid], text).reward,
                config,
            )
            rows = []
            for name, settings in configurations(learned, args.rule):
                rollouts = await run_all(lm, world, bench, test, settings, args.embedding)
                rows.append(row(name, rollouts))
        finally:
            await lm.aclose()
    return {"rows": rows, "learned": describe(learned), "tasks": len(test)}


def report(result: dict[str, Any]) -> str:
    rows: list[Row] = result["rows"]
    lines = [f"{result['tasks']} test tasks, T = {MAX_STEPS}, K = 1, step-level gating", ""]
    lines.append(f"{'configuration':32} {'accuracy':>9} {'calls/task':>11} {'prompt tok/task':>16}")
    for r in rows:
        lines.append(
            f"{r.name:32} {100 * r.accuracy:8.1f}% {r.calls:11.2f} {r.prompt_tokens:16.0f}"
        )
    by = {r.name: r for r in rows}
    base, ours = by["full history"], by["gated memory + halting"]
    fewer_calls = 1 - ours.calls / base.calls
    fewer_tokens = 1 - ours.prompt_tokens / base.prompt_tokens
    points = 100 * (ours.accuracy - base.accuracy)
    ok = fewer_calls >= 0.25 and fewer_tokens >= 0.40 and points >= -1.0
    default = by["default harness"]
    d_calls = 1 - ours.calls / default.calls
    d_tokens = 1 - ours.prompt_tokens / default.prompt_tokens
    d_points = 100 * (ours.accuracy - default.accuracy)
    d_ok = d_calls >= 0.25 and d_tokens >= 0.0 and d_points >= 0.0
    lines += [
        "",
        "gated memory + halting vs full history: "
        f"{100 * fewer_calls:.1f}% fewer calls, {100 * fewer_tokens:.1f}% fewer prompt tokens, "
        f"accuracy {points:+.1f} points -> target {'met' if ok else 'NOT met'}",
        "gated memory + halting vs default harness: "
        f"{100 * d_calls:.1f}% fewer calls, {100 * d_tokens:.1f}% fewer prompt tokens, "
        f"accuracy {d_points:+.1f} points -> target {'met' if d_ok else 'NOT met'}",
        "",
        "fitted on the training rollouts:",
        *(f"  {line}" for line in result["learned"]),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=60)
    parser.add_argument("--test", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedding", default="hashing", help="hashing, or a MiniLM name")
    parser.add_argument("--rule", action="store_true", help="also the untrained agreement rule")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    print(report(result))
    if args.out:
        rows = [r.__dict__ for r in result["rows"]]
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({**result, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
