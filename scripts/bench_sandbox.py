"""Print latency figures of the Python sandbox (`moscopt.agent.tools.sandbox.run_python`).

Usage: python scripts/bench_sandbox.py [--runs N] [--threads T]

Prints the median and 90th percentile wall time of a trivial ``print(1)`` run, of a bare
interpreter start (``python -I -c pass``) for comparison, of a graded run (a solution and its
tests, judged in two processes), of the fallback without bubblewrap (Landlock, seccomp and
namespaces), and the throughput of many runs from a thread pool. Numbers only; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from moscopt.agent.tools import _isolation, sandbox
from moscopt.agent.tools.sandbox import TestSpec, run_python


def _timed(fn: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def _summary(label: str, times: list[float]) -> None:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    print(
        f"{label:40s} median {statistics.median(times) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    prefix = _isolation.namespace_prefix()  # probe once, outside the timings
    mode = sandbox.isolation_available()
    namespaces = "yes" if prefix else "no"
    print(f"isolation: {mode}   namespaces: {namespaces}   root: {_isolation.is_root()}")
    bare = [sys.executable, "-I", "-c", "pass"]
    _summary("bare interpreter start", _timed(lambda: subprocess.run(bare, check=True), args.runs))
    _summary("run_python('print(1)')", _timed(lambda: run_python("print(1)"), args.runs))
    tests = "import math, re, collections, itertools, heapq, hashlib\nassert math.gcd(4, 6) == 2"
    _summary("run_python(stdlib imports + assert)", _timed(lambda: run_python(tests), args.runs))
    solution = "def add(a, b):\n    return a + b\n"
    spec = TestSpec(tests="assert add(1, 2) == 3\nassert add(-1, 1) == 0\n")
    graded = _timed(lambda: run_python(solution, tests=spec), args.runs)
    _summary("run_python(solution, tests=...) graded", graded)
    default_layers = sandbox._LAYERS
    sandbox._LAYERS = sandbox.Layers(bwrap=False)
    _summary(
        "run_python('print(1)') without bwrap", _timed(lambda: run_python("print(1)"), args.runs)
    )
    sandbox._LAYERS = default_layers

    total = args.runs * 4
    start = time.perf_counter()
    with ThreadPoolExecutor(args.threads) as pool:
        results = list(pool.map(lambda _: run_python("print(1)"), range(total)))
    elapsed = time.perf_counter() - start
    failures = sum(not r.ok for r in results)
    print(
        f"{total} runs on {args.threads} threads: {elapsed:.2f} s, "
        f"{total / elapsed:.1f} runs/s, failures: {failures}"
    )


if __name__ == "__main__":
    main()
