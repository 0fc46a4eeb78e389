"""moscopt as a library: your tasks, your grader and your model in one notebook-sized script.

python train_with_api.py --model openai/gpt-4.1-mini
python train_with_api.py --model hosted_vllm/qwen3-8b --api-base http://localhost:8000/v1
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from typing import Any

import moscopt

# 1. Tasks are plain dicts: a question, an answer, and anything else you want to keep.
rng = random.Random(0)
TASKS = [
    {"id": f"sum-{i}", "question": f"Compute {a} + {b}.", "answer": str(a + b)}
    for i, (a, b) in enumerate((rng.randint(10, 99), rng.randint(10, 99)) for _ in range(40))
]


# 2. A grader is a function of the reply and the task's dict: a bool, a float in [0, 1] or a
#    moscopt.benchmarks.Grade.
def grade(task: dict[str, Any], response: str) -> bool:
    found = re.findall(r"FINAL ANSWER:\s*(-?\d+)", response)
    return bool(found) and found[-1] == task["answer"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="openai/gpt-4.1-mini")
    parser.add_argument("--api-base", default=None)
    parser.add_argument("--run", default=None, help="a new run folder (default: runs/tasks-<time>)")
    args = parser.parse_args()
    try:
        demo(args)
    except moscopt.MoscoptError as e:  # bad input, an unreachable provider, a stopped run
        sys.exit(f"train_with_api.py: {e}")  # one line, exit code 1; a stopped run is resumable


def demo(args: argparse.Namespace) -> None:
    # 3. Configuration: dotted keys checked like moscopt.yaml (or a moscopt.Config).
    config = {
        "api_base": args.api_base,
        "pool.n": 3,
        "pool.k": 2,
        "training.epochs": 1,
        "training.max_steps_per_epoch": 3,
        "evolution.enabled": False,
    }
    instructions = "End with a line FINAL ANSWER: <n>"

    # 4. Train: the seed skill library, optimized on your tasks (split 60/20/20 by default).
    result = moscopt.train(
        TASKS, grader=grade, instructions=instructions, config=config, lm=args.model,
        run_dir=args.run,
    )  # fmt: skip
    print(f"validation: {result.before} -> {result.after}; pool {result.pool.names}")
    print(f"edits accepted {result.accepted}, rejected {result.rejected}; {result.calls} calls")

    # 5. Evaluate the trained pool and the no-skill baseline on the test split.
    common: dict[str, Any] = {"grader": grade, "instructions": instructions, "lm": args.model}
    trained = moscopt.evaluate(TASKS, skills=result.run_dir, config=config, **common)
    baseline = moscopt.evaluate(TASKS, config=config, **common)
    low, high = trained.ci95
    interval = f"[{low:.2f}, {high:.2f}]"
    print(f"test: trained {trained.score:.3f} {interval}, no skills {baseline.score:.3f}")

    # 6. Export a routing table (no gate call at run time) and route a new task with it.
    static = moscopt.export(result.run_dir, "static", tasks=TASKS, grader=grade, force=True)
    routing = moscopt.route("Compute 12 + 30.", export_dir=static.out)
    print(f"exported to {static.out}; 'Compute 12 + 30.' -> {routing.skills} ({routing.rule})")


if __name__ == "__main__":
    main()
