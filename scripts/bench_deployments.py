"""The same training over litellm's Router (two deployments) and over the direct path (prints).

    python scripts/bench_deployments.py [--latency 0.1] [--epochs 1] [--repeats 2]
                                        [--variants default,difflib] [--cpu-calls N]
                                        [--strategy simple-shuffle]

Two loopback OpenAI-compatible fake servers, each in its own process (so their CPU is not
ours), answer the scripted world of the tests (`moscopt.testing.scripted`) after `--latency`
seconds. `moscopt train` runs in a child process, as a user runs it (N=3, K=2, minibatches of
4 with M_b = 2, evolution on, `--no-cache`, concurrency 16), once per path, alternating:

- `direct`: `--model openai/scripted --api-base <server 1>` (the HTTP/1.1 transport);
- `router`: `llm.deployments` lists both servers behind litellm's Router (`--strategy`, the
  Router's routing strategy, simple-shuffle by default), which chooses each attempt's
  deployment while moscopt sends it over its direct transport (`moscopt.lm.router_host`);
  with simple-shuffle, the calls made while litellm imports go out without waiting for it
  (drawn as simple-shuffle draws, `moscopt.lm.deployments`).

Variants: `default` is the configuration a user gets; `difflib` sets
`evolution.embedding_model=difflib`, which takes the sentence-embedding model (its import and
encoding) out of both paths, so what is left is the paths' own difference.

For each run: `process` is the child's wall time from spawn to exit; `start` the span from
spawn to its first request (the first `llm_call`'s start in the run's ledger: its end minus its
latency); `work` the span from that request to the ledger's last event (the same calls on both
paths); `end` from that event to the exit; `cpu` the child's user + system CPU. `router/direct`
divides the Router runs' median by the direct runs' median. Then `--cpu-calls` calls on each
path from this process (a prompt of 3,200 characters, 16 at a time) give the CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
MODEL = "openai/scripted"
TIMES = ("start", "work", "end", "process", "cpu")


def stamp(t: str) -> float:
    return datetime.fromisoformat(t).timestamp()


def project_config(path: str, urls: list[str], strategy: str = "simple-shuffle") -> str:
    if path == "direct":
        return ""
    lines = [f"model: {MODEL}", "llm:", f"  routing: {{strategy: {strategy}}}", "  deployments:"]
    lines += [f"    - {{model: {MODEL}, api_base: '{u}', name: d{i}}}" for i, u in enumerate(urls)]
    return "\n".join(lines) + "\n"


def train(root: Path, path: str, variant: str, urls: list[str], epochs: int) -> dict[str, Any]:
    args = [
        sys.executable, "-m", "moscopt", "train", "--benchmark", "addition.yaml",
        "--model", MODEL, "--data", "addition.jsonl",
        "--n", "3", "--k", "2", "--epochs", str(epochs), "--steps-per-epoch", "2",
        "--run", "runs/r", "--no-cache", "--concurrency", "16",
        "--set", "optimizer.batch=4", "--set", "optimizer.minibatch=2",
    ]  # fmt: skip
    if path == "direct":
        args += ["--api-base", urls[0]]
    if variant == "difflib":
        args += ["--set", "evolution.embedding_model=difflib"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "HOME": str(root / "home")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    spawned = time.time()
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    process = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{path} train failed:\n{done.stderr[-2000:]}")
    events = [json.loads(x) for x in (root / "runs/r/events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "llm_call"]
    first_call = min(stamp(e["t"]) - e["latency"] for e in calls)
    deployments = {e.get("deployment") for e in calls}
    return {
        "calls": len(calls),
        "process": process,
        "start": first_call - spawned,
        "work": stamp(events[-1]["t"]) - first_call,
        "end": spawned + process - stamp(events[-1]["t"]),
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "deployments": len(deployments - {None}),
    }


SYSTEM = {"role": "system", "content": "A skill's text. " * 200}


async def waves(lm: Any, tag: str, n: int) -> None:
    for start in range(0, n, 16):
        asks = [[SYSTEM, {"role": "user", "content": f"Compute {i} + {tag}."}]
                for i in range(start, start + 16)]  # fmt: skip
        await asyncio.gather(*(lm.acomplete(messages) for messages in asks))


async def timed(lm: Any, calls: int) -> float:
    await waves(lm, "1", 32)
    before = time.process_time()
    await waves(lm, "2", calls)
    return time.process_time() - before


def cpu_per_call(urls: list[str], calls: int, strategy: str) -> dict[str, float]:
    """Milliseconds of this process's CPU per call on each path, `calls` calls 16 at a time
    (after 32 to warm up: litellm's import and the Router's construction are not counted)."""
    from moscopt.config import Config, DeploymentConfig, LLMConfig, RoutingConfig
    from moscopt.lm import build_lm
    from moscopt.lm.litellm_env import litellm

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    litellm()  # imported first: every timed call goes through the Router
    deployments = [DeploymentConfig(model=MODEL, api_base=u) for u in urls]
    configs = {
        "direct": Config(model=MODEL, api_base=urls[0], llm=LLMConfig(cache=False)),
        "router": Config(
            model=MODEL,
            llm=LLMConfig(
                cache=False, deployments=deployments, routing=RoutingConfig(strategy=strategy)
            ),
        ),
    }
    out = {}
    for path, config in configs.items():
        lm = build_lm(config)
        out[path] = asyncio.run(timed(lm, calls)) / calls * 1000
        lm.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variants", default="default,difflib")
    parser.add_argument("--cpu-calls", type=int, default=0, help="N: also CPU per call (untested)")
    parser.add_argument("--strategy", default="simple-shuffle", help="llm.routing.strategy")
    a = parser.parse_args()
    from moscopt.testing.loopback import ServerProcess
    from moscopt.testing.scripted import write_project

    responder = "moscopt.testing.scripted:server_responder"
    servers = [ServerProcess(a.latency, responder=responder) for _ in range(2)]
    urls = [s.url for s in servers]
    loads = [os.getloadavg()[0]]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    cpu: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for variant in a.variants.split(","):
                for i in range(a.repeats):
                    for path in ("direct", "router"):
                        root = Path(tmp) / f"{variant}-{path}-{i}"
                        root.mkdir()
                        write_project(root, REPO / "skills", project_config(path, urls, a.strategy))
                        r = train(root, path, variant, urls, a.epochs)
                        runs.setdefault((variant, path), []).append(r)
                        loads.append(os.getloadavg()[0])
        if a.cpu_calls:
            cpu = cpu_per_call(urls, a.cpu_calls, a.strategy)
            loads.append(os.getloadavg()[0])
    finally:
        for s in servers:
            s.stop()
    print(f"latency {a.latency * 1000:.0f} ms, {a.epochs} epoch(s), {a.repeats} repeats, "
          f"router strategy {a.strategy}; "
          f"load average {min(loads):.2f}-{max(loads):.2f}")  # fmt: skip
    head = ("variant", "path", "calls", "deploys", *(f"{k} s" for k in TIMES))
    print("  ".join(f"{h:>10}" for h in head))
    for (variant, path), rows in runs.items():
        for r in rows:
            cells = [variant, path, str(r["calls"]), str(r["deployments"])]
            cells += [f"{r[k]:.2f}" for k in TIMES]
            print("  ".join(f"{c:>10}" for c in cells))
    for variant in a.variants.split(","):
        med = {p: {k: statistics.median(r[k] for r in runs[(variant, p)]) for k in TIMES}
               for p in ("direct", "router")}  # fmt: skip
        ratio = {k: med["router"][k] / med["direct"][k] for k in ("work", "process", "cpu")}
        print(f"{variant}: router/direct (medians) work {ratio['work']:.2f}x, process "
              f"{ratio['process']:.2f}x, cpu {ratio['cpu']:.2f}x; start-up router "
              f"{med['router']['start']:.2f} s, direct {med['direct']['start']:.2f} s")  # fmt: skip
    if cpu:
        print(f"CPU per call ({a.cpu_calls} calls, 16 at a time, after litellm's import): router "
              f"{cpu['router']:.2f} ms, direct {cpu['direct']:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
