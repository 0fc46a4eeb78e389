"""moscopt's evaluation next to GEPA's and DSPy's, on the same tasks and server (prints figures).

    python scripts/bench_peers.py [--tasks 256] [--latency 0.1] [--concurrency 1,8,32,64]
                                  [--cpu-tasks 2000] [--skip-cpu] [--peers moscopt,gepa,dspy]

One loopback OpenAI-compatible fake server (its own process, `latency` seconds per answer)
serves every run. Each framework evaluates the same `--tasks` additions in a fresh process:

- moscopt: `moscopt eval --mode none --no-cache` (the command line, as a user runs it);
- GEPA: `DefaultAdapter("openai/fake").evaluate(batch, candidate)` with `max_litellm_workers`
  = concurrency;
- DSPy: `dspy.Evaluate(devset, metric, num_threads=concurrency)(dspy.Predict("question -> answer"))`
  with the LM's cache off.

The server answers in a form all three parse (DSPy's field markers around `FINAL ANSWER: n`),
so nobody makes extra calls. For each run: `eval` is the span from the first request's arrival
to the last answer, as the server saw it; `process` is the child's wall time from spawn to exit
(imports, set-up, teardown included), split into `start` (spawn to the first request) and `end`
(the last answer to the exit); `cpu` is the child's user + system CPU (steadier than wall time
on a loaded machine). `eval` and `process` are divided by the ideal,
ceil(tasks / concurrency) x latency: the time the calls would take if nothing else cost anything.

CPU per call: moscopt's own CPU (user + system of its process) for `--cpu-tasks` tasks at
concurrency 64, minus that of a 16-task run (imports and set-up), divided by the difference in
calls; for `--mode none` (one call per task) and `--mode mixture` (the gate, then the agent:
two calls per task). The server's CPU is in its own process and not counted.

GEPA and DSPy are not moscopt dependencies: `pip install gepa dspy` to include them; a peer that
is not installed is skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from moscopt.testing.loopback import ServerProcess, child_cpu, write_sums  # noqa: E402

# -- the server (a child process) ----------------------------------------------------------------


def respond(body: dict[str, Any]) -> str:
    """Answers every framework parses: the gate's ACTIVATE line, else DSPy's fields."""
    last = str(body["messages"][-1]["content"])
    if "## Available skills" in last:
        ids = [ln.split("|")[1].strip() for ln in last.splitlines() if ln.startswith("| ")][1:]
        k = int(last.split("Choose exactly ")[1].split()[0]) if "Choose exactly " in last else 3
        return "ACTIVATE: " + ", ".join(ids[:k])
    m = re.search(r"Compute (\d+) \+ (\d+)", last)
    gold = int(m.group(1)) + int(m.group(2)) if m else 0
    return f"[[ ## answer ## ]]\nFINAL ANSWER: {gold}\n\n[[ ## completed ## ]]"


def tasks(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_gepa(url: str, concurrency: int, data: Path) -> float:
    from gepa.adapters.default_adapter.default_adapter import (  # type: ignore[import-not-found, unused-ignore]
        DefaultAdapter,
    )

    adapter = DefaultAdapter(
        model="openai/fake",
        max_litellm_workers=concurrency,
        litellm_batch_completion_kwargs={"api_base": url, "api_key": "no-key", "max_tokens": 64},
    )
    batch: Any = [
        {"input": t["question"], "additional_context": {}, "answer": t["answer"]}
        for t in tasks(data)
    ]
    result = adapter.evaluate(batch, {"system_prompt": "Solve the task."})
    return sum(result.scores) / len(result.scores)


def run_dspy(url: str, concurrency: int, data: Path) -> float:
    import dspy  # type: ignore[import-untyped, import-not-found, unused-ignore]

    lm = dspy.LM("openai/fake", api_base=url, api_key="no-key", cache=False, max_tokens=64)
    dspy.configure(lm=lm)
    devset = [
        dspy.Example(question=t["question"], answer=t["answer"]).with_inputs("question")
        for t in tasks(data)
    ]

    def metric(example: Any, prediction: Any, trace: Any = None) -> bool:
        return str(example.answer) in str(prediction.answer)

    evaluate = dspy.Evaluate(
        devset=devset, metric=metric, num_threads=concurrency, display_progress=False
    )
    result = evaluate(dspy.Predict("question -> answer"))
    return float(getattr(result, "score", result)) / 100.0


def moscopt_cmd(url: str, concurrency: int, work: Path, mode: str) -> list[str]:
    cmd = [
        sys.executable, "-m", "moscopt", "eval", "--benchmark", str(work / "sums.yaml"),
        "--data", str(work / "sums.jsonl"), "--split", "all", "--mode", mode,
        "--model", "openai/fake", "--api-base", url, "--concurrency", str(concurrency),
        "--no-cache", "--json", "--out", str(work / f"out-{time.monotonic_ns()}.jsonl"),
    ]  # fmt: skip
    if mode == "mixture":
        cmd += ["--skills", str(REPO / "skills")]
    return cmd


def peer_cmd(peer: str, url: str, concurrency: int, work: Path) -> list[str]:
    if peer == "moscopt":
        return moscopt_cmd(url, concurrency, work, "none")
    data = str(work / "sums.jsonl")
    return [sys.executable, str(HERE), "--peer", peer, "--url", url, "-c", str(concurrency), data]


def installed(peer: str) -> bool:
    return peer == "moscopt" or importlib.util.find_spec(peer) is not None


# -- measuring -----------------------------------------------------------------------------------


def write_work(work: Path, n: int) -> None:
    write_sums(
        work,
        n,
        description="Additions for the peer benchmark",
        extra='answer_instructions: "End with FINAL ANSWER: <n>"\n',
    )


class Timed:
    """One child process: its wall time, CPU time, output and when (time.time()) it ran."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        cpu = child_cpu()
        self.spawned = time.time()
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        self.wall = time.perf_counter() - started
        self.exited = time.time()
        if done.returncode != 0:
            raise RuntimeError(f"{cmd[:4]} failed ({done.returncode}): {done.stderr[-2000:]}")
        self.cpu = child_cpu() - cpu
        self.out = done.stdout


def compare(
    server: ServerProcess, args: argparse.Namespace, work: Path, env: dict[str, str]
) -> None:
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if not installed(p):
            print(f"  {p}: not installed (pip install {p}); skipped")
    peers = [p for p in peers if installed(p)]
    print(
        f"{'peer':8} {'conc':>4} {'ideal s':>8} {'eval s':>7} {'eval/ideal':>10} "
        f"{'process s':>9} {'process/ideal':>13} {'over ideal s':>12} {'start s':>7} "
        f"{'end s':>6} {'cpu s':>6} {'calls':>6} {'score':>5}"
    )
    for c in args.concurrency:
        ideal = math.ceil(args.tasks / c) * args.latency
        for peer in peers:
            server.reset()
            run = Timed(peer_cmd(peer, server.url, c, work), work, env)
            out = run.out
            score = json.loads(out)["score"] if peer == "moscopt" else float(out.split()[-1])
            s = server.stats()
            span = s["last_done"] - s["first_arrival"]
            start = s["first_arrival"] - run.spawned  # spawn to the first request
            end = run.exited - s["last_done"]  # the last answer to the exit
            print(
                f"{peer:8} {c:4d} {ideal:8.2f} {span:7.2f} {span / ideal:10.2f} "
                f"{run.wall:9.2f} {run.wall / ideal:13.2f} {run.wall - ideal:12.2f} "
                f"{start:7.2f} {end:6.2f} {run.cpu:6.2f} {s['requests']:6d} {score:5.2f}"
            )


def cpu_per_call(server: ServerProcess, args: argparse.Namespace, env: dict[str, str]) -> None:
    print(f"moscopt CPU per call ({args.cpu_tasks} tasks minus 16, concurrency 64):")
    for mode in ("none", "mixture"):
        figures = []
        for n in (16, args.cpu_tasks):
            with tempfile.TemporaryDirectory() as d:
                work = Path(d)
                write_work(work, n)
                server.reset()
                run = Timed(moscopt_cmd(server.url, 64, work, mode), work, env)
                figures.append((run.cpu, int(server.stats()["requests"]), run.wall))
        (cpu0, calls0, _), (cpu1, calls1, wall1) = figures
        per_call = (cpu1 - cpu0) / (calls1 - calls0)
        per_task = (cpu1 - cpu0) / (args.cpu_tasks - 16)
        print(
            f"  --mode {mode:8}: {per_call * 1e3:.2f} ms per call, {per_task * 1e3:.2f} ms per "
            f"task ({calls1} calls, {cpu1:.2f} s CPU, {wall1:.2f} s wall; set-up {cpu0:.2f} s CPU)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("-c", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("data", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", default="1,8,32,64")
    parser.add_argument("--cpu-tasks", type=int, default=2000)
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--peers", default="moscopt,gepa,dspy")
    args = parser.parse_args()
    if args.peer:
        run = {"gepa": run_gepa, "dspy": run_dspy}[args.peer]
        print(run(args.url, args.c, Path(args.data)))
        return
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    responder = f"{HERE}:respond"
    with (
        ServerProcess(args.latency, responder=responder) as server,
        tempfile.TemporaryDirectory() as d,
    ):
        work = Path(d)
        env = dict(os.environ, MOSCOPT_HOME=str(work / "home"), PYTHONWARNINGS="ignore")
        # litellm (under GEPA and DSPy) would otherwise fetch its price map at import time
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        env.setdefault("OPENAI_API_KEY", "no-key")
        write_work(work, args.tasks)
        print(
            f"{args.tasks} tasks, server latency {args.latency * 1e3:.0f} ms, "
            f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {load()}"
        )
        compare(server, args, work, env)
        if not args.skip_cpu:
            cpu_per_call(server, args, env)
        print(f"load average at the end {load()}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
