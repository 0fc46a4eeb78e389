"""The response cache's cost: moscopt's CPU per call of a fresh eval and of its cached rerun.

    python scripts/bench_cache.py [--tasks 2000] [--repeat 3] [--ops 5000]

One loopback OpenAI-compatible fake server (`moscopt.testing.loopback.ServerProcess`, its own
process, no latency: its CPU is not counted) answers every call. Each row runs
`moscopt eval --mode none --concurrency 64` on `--tasks` additions in a fresh process, as a user
runs it, with the response cache on (the default) in a new `MOSCOPT_HOME`:

- `fresh eval`: the cache is empty, so every task makes one call and stores its answer;
- `cached rerun`: the same command again, answered from the cache (0 calls);
- `no cache` (for reference): `--no-cache`, every task calls and nothing is stored.

CPU per call is the process's user + system CPU for `--tasks` tasks minus that of a 16-task run
(imports and set-up), divided by the difference in tasks (one call, or one cache hit, per task);
the best of `--repeat` runs (the least disturbed by other work on the machine). Then the store
alone, in this process: `ResponseCache.put` and `.get` of `--ops` answers of ~1 KB, in
microseconds per operation (best of `--repeat`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's moscopt, as in the children

from moscopt.testing.loopback import ServerProcess, child_cpu, write_sums  # noqa: E402


def eval_cpu(server: ServerProcess, work: Path, home: Path, *, cache: bool) -> tuple[float, int]:
    """One `moscopt eval` in a fresh process: its CPU seconds and the calls the server saw."""
    cmd = [
        sys.executable, "-m", "moscopt", "eval", "--benchmark", str(work / "sums.yaml"),
        "--data", str(work / "sums.jsonl"), "--split", "all", "--mode", "none",
        "--model", "openai/fake", "--api-base", server.url, "--concurrency", "64", "--json",
        "--out", str(work / f"out-{time.monotonic_ns()}.jsonl"),
    ]  # fmt: skip
    if not cache:
        cmd.append("--no-cache")
    env = dict(os.environ, MOSCOPT_HOME=str(home), PYTHONWARNINGS="ignore")
    env.pop("MOSCOPT_CACHE_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("OPENAI_API_KEY", "no-key")
    before, calls = child_cpu(), server.requests()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"eval failed ({done.returncode}): {done.stderr[-2000:]}")
    return child_cpu() - before, server.requests() - calls


def rows(server: ServerProcess, tasks: int) -> dict[str, tuple[float, int, int]]:
    """Per row: CPU of `tasks` minus CPU of 16 tasks, and the calls of each."""
    figures: dict[str, list[tuple[float, int]]] = {}
    for n in (16, tasks):
        with tempfile.TemporaryDirectory() as d:
            work = Path(d)
            write_sums(work, n, description="Additions for the cache benchmark")
            for name, home, cache in (
                ("fresh eval", "h", True), ("cached rerun", "h", True), ("no cache", "n", False)
            ):  # fmt: skip
                figures.setdefault(name, []).append(
                    eval_cpu(server, work, work / home, cache=cache)
                )
    return {name: (big[0] - small[0], small[1], big[1]) for name, (small, big) in figures.items()}


def store_alone(ops: int) -> tuple[float, float]:
    """Microseconds per `put` and per `get` of ~1 KB answers in a new cache folder."""
    from moscopt.lm.base import Completion, Usage
    from moscopt.lm.cache import ResponseCache

    text = "The sum is computed digit by digit, carrying as needed. " * 18
    answers = [
        (f"{i:064x}", Completion(text=f"{text}{i}", model="openai/fake", usage=Usage(300, 200)))
        for i in range(ops)
    ]
    with tempfile.TemporaryDirectory() as d:
        cache = ResponseCache(Path(d) / "cache")
        cache.get("0" * 64)  # opens the store
        started = time.process_time()
        for key, answer in answers:
            cache.put(key, answer)
        put = time.process_time() - started
        started = time.process_time()
        for key, _ in answers:
            assert cache.get(key) is not None
        get = time.process_time() - started
        cache.close()
    return put / ops * 1e6, get / ops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", type=int, default=5000)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")
    with ServerProcess(0.0, env=env) as server:
        print(f"{args.tasks} tasks minus 16, concurrency 64, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}, best of {args.repeat}")  # fmt: skip
        best: dict[str, tuple[float, int, int]] = {}
        for _ in range(args.repeat):
            for name, found in rows(server, args.tasks).items():
                if name not in best or found[0] < best[name][0]:
                    best[name] = found
        for name, (cpu, calls16, calls) in best.items():
            per_task = cpu / (args.tasks - 16) * 1e3
            print(
                f"  {name:13}: {per_task:.3f} ms CPU per task ({calls} calls; 16 tasks: {calls16})"
            )
        puts, gets = zip(*(store_alone(args.ops) for _ in range(args.repeat)), strict=True)
        print(f"  store alone  : put {min(puts):.1f} us, get {min(gets):.1f} us ({args.ops} ops)")
        print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
