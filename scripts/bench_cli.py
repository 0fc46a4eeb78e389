"""Start-up of the command line and the whole process of an evaluation (prints figures).

    python scripts/bench_cli.py [--repeat 9] [--tasks 256] [--latency 0.1]
                                [--concurrency 1,8,32] [--process-repeat 3]

Targets (DESIGN.md section 7): `moscopt --help` and `moscopt status` start in < 0.3 s; process
start to first request <= 0.3 s; the whole process within ideal + 0.5 s at every concurrency.

Every figure is a fresh interpreter as a user starts it (`python -m moscopt ...`), with the
bytecode of moscopt compiled once beforehand as `pip install` does (a private
PYTHONPYCACHEPREFIX, written by an unmeasured first run), so that compiling the sources is not
counted even where PYTHONDONTWRITEBYTECODE is set.

1. Start-up: the median wall time of `--repeat` runs of `python -c pass` (the interpreter),
   `moscopt --help`, `moscopt eval --help` and `moscopt status` (in a fresh `moscopt init`
   project).
2. Process start to first request: `start` of a 1-task evaluation (below), median of
   `--repeat` runs, with the CPU the process used in all (steadier than wall time under load).
3. An evaluation, as a user gets it: `moscopt eval` of `--tasks` additions (`--split all`, the
   default mode `none`, the response cache on, a fresh cache for each run so every task is a
   call) against a loopback OpenAI-compatible fake server in its own process
   (`moscopt.testing.loopback.ServerProcess`, `--latency` seconds per answer). For each
   concurrency c, the median of `--process-repeat` runs of: `start` (spawn to the server's
   first request), `eval` (the first request to the last answer, as the server saw them),
   `end` (the last answer to the exit), `process` (spawn to exit) and `process - ideal`, where
   ideal = ceil(tasks / c) x `answer` is the server's work alone: `answer` is the server's
   median time per answer as it measured it (from its request line's arrival to its answer's
   last byte out: `--latency` plus the fake server's own lateness, about 0.3 ms, which is not
   moscopt's); `- nominal` is process - ceil(tasks / c) x latency, that lateness included;
   `cpu` is moscopt's user + system CPU over the whole process.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from moscopt.testing.loopback import ServerProcess, child_cpu, write_sums  # noqa: E402


def child_env(work: Path) -> dict[str, str]:
    """The environment of every measured child: moscopt from this checkout, its bytecode
    cached in `work` (as installed), a home and cache of its own."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["MOSCOPT_HOME"] = str(work / "home")
    env.setdefault("OPENAI_API_KEY", "no-key")
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of `cmd`."""
    cpu = child_cpu()
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0, child_cpu() - cpu


def startup(args: argparse.Namespace, work: Path, env: dict[str, str]) -> None:
    py = sys.executable
    project = work / "project"
    subprocess.run([py, "-m", "moscopt", "init", str(project)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    rows = [
        ("python -c pass", [py, "-c", "pass"]),
        ("moscopt --help", [py, "-m", "moscopt", "--help"]),
        ("moscopt eval --help", [py, "-m", "moscopt", "eval", "--help"]),
        ("moscopt status", [py, "-m", "moscopt", "status"]),
    ]
    print(
        f"start-up: median of {args.repeat} runs, wall and CPU (user + system; steadier under "
        "load), target < 0.3 s for --help and status"
    )
    for label, cmd in rows:
        timed(cmd, project, env)  # compiles the bytecode, warms the file cache
        runs = [timed(cmd, project, env) for _ in range(args.repeat)]
        walls = [w for w, _ in runs]
        cpu = statistics.median(c for _, c in runs)
        print(
            f"  {label:<22} wall {statistics.median(walls) * 1e3:6.1f} ms"
            f" (min {min(walls) * 1e3:5.1f})  cpu {cpu * 1e3:6.1f} ms"
        )


def eval_once(
    server: ServerProcess, work: Path, env: dict[str, str], c: int, *flags: str
) -> dict[str, float]:
    """One `moscopt eval` against `server`: its phases in seconds (see the module docstring)."""
    tag = time.monotonic_ns()
    cmd = [
        sys.executable, "-m", "moscopt", "eval", "--benchmark", str(work / "sums.yaml"),
        "--data", str(work / "sums.jsonl"), "--split", "all", "--model", "openai/fake",
        "--api-base", server.url, "--concurrency", str(c), "--json",
        "--out", str(work / f"out-{tag}.jsonl"), *flags,
    ]  # fmt: skip
    run_env = dict(env, MOSCOPT_CACHE_DIR=str(work / f"cache-{tag}"))  # every task a call
    server.reset()
    cpu = child_cpu()
    spawned = time.time()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=run_env, capture_output=True, text=True)
    process = time.perf_counter() - t0
    cpu = child_cpu() - cpu
    exited = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"moscopt eval failed ({done.returncode}): {done.stderr[-2000:]}")
    s = server.stats()
    return {
        "start": s["first_arrival"] - spawned,
        "eval": s["last_done"] - s["first_arrival"],
        "end": exited - s["last_done"],
        "answer": s["median_seconds"],
        "process": process,
        "cpu": cpu,
        "calls": s["requests"],
    }


def whole_process(args: argparse.Namespace, work: Path, env: dict[str, str]) -> None:
    write_sums(
        work,
        args.tasks,
        description="Additions for the start-up benchmark",
        extra='answer_instructions: "End with FINAL ANSWER: <n>"\n',
    )
    with ServerProcess(args.latency, env=env) as server:
        eval_once(server, work, env, max(args.concurrency))  # unmeasured: writes the bytecode
        first = [eval_once(server, work, env, 1, "--limit", "1") for _ in range(args.repeat)]
        print(
            f"\nprocess start to first request, `moscopt eval` of 1 task, median of {args.repeat} "
            f"runs (target <= 0.3 s): {statistics.median(r['start'] for r in first):.3f} s "
            f"(min {min(r['start'] for r in first):.3f}); the process's CPU (imports, set-up, "
            f"the call, exit) {statistics.median(r['cpu'] for r in first):.3f} s"
        )
        print(
            f"\nmoscopt eval of {args.tasks} tasks, server latency {args.latency * 1e3:.0f} ms, "
            f"median of {args.process_repeat} runs (targets: start <= 0.3 s, "
            f"process - ideal <= 0.5 s)"
        )
        print(
            f"  {'conc':>4} {'ideal s':>8} {'start s':>8} {'eval s':>7} {'end s':>6} "
            f"{'process s':>9} {'process - ideal s':>17} {'- nominal s':>11} {'answer ms':>9} "
            f"{'cpu s':>6} {'calls':>6}"
        )
        for c in args.concurrency:
            rounds = math.ceil(args.tasks / c)
            runs = [eval_once(server, work, env, c) for _ in range(args.process_repeat)]
            for r in runs:  # each run against the server's own time per answer in that run
                r["over"] = r["process"] - rounds * r["answer"]
                r["nominal"] = r["process"] - rounds * args.latency
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"  {c:4d} {rounds * m['answer']:8.2f} {m['start']:8.3f} {m['eval']:7.2f} "
                f"{m['end']:6.3f} {m['process']:9.2f} {m['over']:17.2f} {m['nominal']:11.2f} "
                f"{m['answer'] * 1e3:9.2f} {m['cpu']:6.2f} {int(m['calls']):6d}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per start-up figure")
    parser.add_argument("--tasks", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--process-repeat", type=int, default=3, help="runs per concurrency")
    parser.add_argument("--skip-eval", action="store_true", help="start-up figures only")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    load = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        env = child_env(work)
        startup(args, work, env)
        if not args.skip_eval:
            whole_process(args, work, env)
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
