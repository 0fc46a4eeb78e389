"""Gated memory and halting on a tool loop that keeps verifying: calls and prompt tokens per task
with and without, at equal accuracy.

    python scripts/bench_memory_tools.py [--train 40] [--test 80] [--steps 5] [--seed 0]
                                         [--step-gating] [--out FILE]

The agent and its LLM gate talk over HTTP to `moscopt.testing.fake_server.FakeServer` playing
`moscopt.testing.verify_world.VerifyWorld`: the model computes with the python tool (the real
sandbox), then states its answer in every later reply ("The answer is 391.", "**Answer:** 391",
a JSON field, a bold last line; spelled "391", "391.0" or "$391") while asking for one more
verifying call, until the step budget T runs out; on 30% of the tasks its first reply states a
wrong estimate before computing. Prompt tokens are the server's word counts.

Configurations (K = 1, T = `--steps`, the python tool; `--step-gating` adds the same three with
step-level gating):

- default harness: no memory, no halting (the run goes to the budget);
- memory + halting: `memory.enabled` and `memory.halting.enabled` as a user gets them, before
  any training (the untrained agreement rule);
- memory + halting, trained: the gates and the halting controller fitted
  (`moscopt.extensions.memory.training.learn`) on the training tasks run to T with the memory on.

Prints accuracy, LLM calls per task (gate and agent), prompt tokens per task and the share of
runs halted early, and the issue's target for each memory row against the default harness:
>= 25% fewer calls, no more prompt tokens, accuracy unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass
from typing import Any

from moscopt.agent.harness import Rollout
from moscopt.benchmarks import Benchmark, Task, get_benchmark
from moscopt.config import LLMConfig, load_config
from moscopt.extensions.memory.params import MemoryState
from moscopt.extensions.memory.tracker import MemorySettings
from moscopt.extensions.memory.training import describe, learn
from moscopt.lm.client import LiteLLMClient
from moscopt.testing.fake_server import FakeServer
from moscopt.testing.verify_world import VerifyWorld

ON = {"memory.enabled": True, "memory.halting.enabled": True}


@dataclass(frozen=True)
class Row:
    name: str
    accuracy: float
    calls: float
    prompt_tokens: float
    halted: float  # share of tasks halted early


async def run_all(
    lm: LiteLLMClient,
    world: VerifyWorld,
    bench: Benchmark,
    tasks: list[Task],
    settings: MemorySettings | None,
    args: argparse.Namespace,
    granularity: str = "task",
) -> list[Rollout]:
    agent = world.skill_agent(
        lm, bench, settings, max_steps=args.steps, embedding_model=args.embedding,
        granularity=granularity,
    )  # fmt: skip
    slots = asyncio.Semaphore(8)

    async def one(task: Task) -> Rollout:
        async with slots:
            return await agent.run(task)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def row(name: str, rollouts: list[Rollout]) -> Row:
    n = max(1, len(rollouts))
    halted = sum(bool((r.extra.get("memory") or {}).get("halted_early")) for r in rollouts)
    return Row(
        name,
        sum(r.reward for r in rollouts) / n,
        sum(r.calls for r in rollouts) / n,
        sum(r.prompt_tokens for r in rollouts) / n,
        halted / n,
    )


def configurations(learned: MemoryState) -> list[tuple[str, MemorySettings | None]]:
    memory = load_config(None, ON).memory
    return [
        ("default harness", None),
        ("memory + halting", MemorySettings.from_config(memory)),
        ("memory + halting, trained", MemorySettings.from_config(memory, learned)),
    ]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    world = VerifyWorld(n_tasks=args.train + args.test, seed=args.seed)
    tasks = world.tasks()
    train, test = tasks[: args.train], tasks[args.train :]
    bench = get_benchmark("offline")  # exact match; a numeric gold compares by value
    with FakeServer(responder=world.responder) as server:
        lm = LiteLLMClient("openai/world", api_base=server.url, llm=LLMConfig(concurrency=8))
        try:
            explore = MemorySettings(context=True)  # to T: uncensored examples
            train_rollouts = await run_all(lm, world, bench, train, explore, args)
            by_id = {t.id: t for t in train}
            learned = learn(
                None,
                train_rollouts,
                lambda tid, text: bench.grade(by_id[tid], text).reward,
                load_config(None, ON),
            )
            rows = []
            modes = ["task", "step"] if args.step_gating else ["task"]
            for granularity in modes:
                for name, settings in configurations(learned):
                    label = name if granularity == "task" else f"{name} (step gating)"
                    rollouts = await run_all(lm, world, bench, test, settings, args, granularity)
                    rows.append(row(label, rollouts))
        finally:
            await lm.aclose()
    return {"rows": rows, "learned": describe(learned), "tasks": len(test), "steps": args.steps}


def report(result: dict[str, Any]) -> str:
    rows: list[Row] = result["rows"]
    lines = [f"{result['tasks']} test tasks, T = {result['steps']}, K = 1, python tool", ""]
    lines.append(
        f"{'configuration':42} {'accuracy':>9} {'calls/task':>11} {'prompt tok/task':>16} "
        f"{'halted':>7}"
    )
    for r in rows:
        lines.append(
            f"{r.name:42} {100 * r.accuracy:8.1f}% {r.calls:11.2f} {r.prompt_tokens:16.0f} "
            f"{100 * r.halted:6.0f}%"
        )
    lines.append("")
    for r in rows:
        if r.name.startswith("default harness"):
            base = r
            continue
        fewer_calls = 1 - r.calls / base.calls
        fewer_tokens = 1 - r.prompt_tokens / base.prompt_tokens
        points = 100 * (r.accuracy - base.accuracy)
        ok = fewer_calls >= 0.25 and fewer_tokens >= 0.0 and points >= 0.0
        lines.append(
            f"{r.name} vs {base.name}: {100 * fewer_calls:.1f}% fewer calls, "
            f"{100 * fewer_tokens:.1f}% fewer prompt tokens, accuracy {points:+.1f} points "
            f"-> target {'met' if ok else 'NOT met'}"
        )
    lines += ["", "fitted on the training rollouts:", *(f"  {x}" for x in result["learned"])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=40)
    parser.add_argument("--test", type=int, default=80)
    parser.add_argument("--steps", type=int, default=5, help="T, the step budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedding", default="hashing", help="hashing, or a MiniLM name")
    parser.add_argument("--step-gating", action="store_true", help="also with step gating")
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
