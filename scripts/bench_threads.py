"""Threads for the embedded model: 1 vs 2 vs auto, on an idle and on a loaded machine.

    python scripts/bench_threads.py [--requests 6] [--load 2] [--threads 1,2,auto]

Each setting runs in a fresh process (the thread count is fixed when llama.cpp loads): one
warm-up request, then `--requests` chat requests shaped like the trainer's agent calls (a skill
block of about 400 tokens, a short task, exactly 96 generated tokens). It prints the
median seconds per request and generated tokens per second. "loaded" runs the same with `--load`
busy-looping processes beside it, standing in for the other work of a shared machine (a test
suite, a second run); the spinners start before the model loads and stop after the last request.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

SKILL = "\n".join(
    f"- Rule {i}: when the task mentions quantity {i}, write the equation first, then check "
    f"units and the sign of every term before giving the final number."
    for i in range(1, 17)
)
TASK = "A shop sells pencils at 3 for 2 dollars. How much do 12 pencils cost? Think briefly."


def _spin() -> None:  # pragma: no cover - a background load
    while True:
        pass


def _measure(threads: str, requests: int) -> dict[str, float]:
    from moscopt.lm.local import SmolLM2Engine, check_installed

    engine = SmolLM2Engine(check_installed(), threads="auto" if threads == "auto" else int(threads))
    body = {
        "messages": [
            {"role": "system", "content": "You follow these skills.\n" + SKILL},
            {"role": "user", "content": TASK},
        ],
        "max_tokens": 96,
        "temperature": 0.0,
        "seed": 0,
        "ignore_eos": True,  # every request generates exactly max_tokens
    }
    engine.chat(body)  # warm-up (and the load)
    seconds: list[float] = []
    tokens: list[int] = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = engine.chat(body)
        seconds.append(time.perf_counter() - started)
        tokens.append(int(answer.get("usage", {}).get("completion_tokens", 0)))
    median = statistics.median(seconds)
    return {
        "threads": float(engine.threads),
        "seconds": median,
        "tokens_per_second": statistics.median(tokens) / median if median else 0.0,
    }


def _run_child(threads: str, requests: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", threads, "--requests", str(requests)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--load", type=int, default=2, help="busy processes for 'loaded'")
    parser.add_argument("--threads", default="1,2,auto")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.requests)))
        return
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    print("| machine | threads | resolved | s/request | generated tok/s |")
    print("|---|---|---|---|---|")
    for machine in ("idle", "loaded"):
        spinners = []
        if machine == "loaded":
            spinners = [
                multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)
            ]
            for spinner in spinners:
                spinner.start()
            time.sleep(2.0)  # let the load average see them
        try:
            for threads in args.threads.split(","):
                r = _run_child(threads, args.requests)
                print(
                    f"| {machine} | {threads} | {int(r['threads'])} | {r['seconds']:.2f} |"
                    f" {r['tokens_per_second']:.1f} |",
                    flush=True,
                )
        finally:
            for spinner in spinners:
                spinner.terminate()
                spinner.join()


if __name__ == "__main__":
    main()
