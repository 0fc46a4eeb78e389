"""A small training run against the loopback server: wall time over its critical path (prints).

    python scripts/bench_train.py [--latency 0.1] [--epochs 2] [--repeats 2]

The scripted world of the tests (`moscopt.testing.scripted`: the agent succeeds once a skill
holds the magic rule) is served by the fake OpenAI-compatible server in its own process, so
its CPU is not ours, answering each request after `--latency` seconds. `moscopt train` runs
in a child process (N=3, K=2, minibatches of 4 with M_b = 2, so a reflection is two analyses
and a merge; evolution on) in a fresh project, with the configuration a user gets (`default`:
evolution's diversity check embeds the pool with MiniLM) and, as a second row, with
`evolution.embedding_model: difflib` (no model). Then the same command runs again into a new
run directory: every answer comes from the project's response cache and every vector from its
vector store (`rerun s`, the child's wall time; `rerun calls`: the calls it did not find).

The critical path is measured from the run's ledger. Each `llm_call` event is stamped when the
call ended (`t`, milliseconds) and carries its `latency`, so it spans [t - latency, t]. A call
depends on every call that ended before it started (within a quarter of the latency, for the
clock's resolution); the critical path is the longest chain of such calls, found over the calls
sorted by start (each call's chain is one more than the longest chain among the calls that
ended before it began). It counts the sequential waves of LLM calls the run made:
with the server never saturated (concurrency 16), a wave that could have overlapped another
but did not lengthens it. `waves/step`: the same count within each optimizer step (the calls
carry their step), averaged over the steps. `training` is the span of the ledger from
`train_start` to the last event; `idle` the part of it with no call in flight (our own work
between waves, the diversity check's wait for its model included); `call ms` the mean latency
of a call as the LM layer measured it (the server's latency plus HTTP); `process` is the
child's wall time (imports and set-up included). The targets: training / (critical path x
latency) <= 1.3 with the default configuration; a cached rerun <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))


def stamp(t: str) -> float:
    return datetime.fromisoformat(t).timestamp()


def critical_path(spans: list[tuple[float, float]], slack: float) -> int:
    """The longest chain of spans (start, end), each starting after the previous one ended."""
    order = sorted(spans)
    chain: list[int] = []
    for start, _ in order:
        before = [c for (_, end), c in zip(order, chain, strict=False) if end <= start + slack]
        chain.append(1 + max(before, default=0))
    return max(chain, default=0)


def idle(spans: list[tuple[float, float]], start: float) -> float:
    """Seconds after `start` with no call in flight (our own work between waves)."""
    total, reached = 0.0, start
    for s, e in sorted(spans):
        total += max(0.0, s - reached)
        reached = max(reached, e)
    return total


def train(url: str, root: Path, run: str, extra: list[str], epochs: int) -> dict[str, Any]:
    args = [
        sys.executable, "-m", "moscopt", "train", "--benchmark", "addition.yaml",
        "--model", "openai/scripted", "--api-base", url, "--data", "addition.jsonl",
        "--n", "3", "--k", "2", "--epochs", str(epochs), "--steps-per-epoch", "2",
        "--run", run, "--concurrency", "16",
        "--set", "optimizer.batch=4", "--set", "optimizer.minibatch=2", *extra,
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "HOME": str(root / "home")}
    env["PYTHONPATH"] = str(REPO)  # this checkout's code, wherever moscopt is installed from
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True)
    process = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"train failed:\n{done.stderr[-2000:]}")
    events = [json.loads(x) for x in (root / run / "events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["type"] == "llm_call" and not e.get("cache_hit")]
    spans = [(stamp(e["t"]) - e["latency"], stamp(e["t"])) for e in calls]
    first = next(stamp(e["t"]) for e in events if e["type"] == "train_start")
    end = stamp(events[-1]["t"])
    steps: dict[Any, list[tuple[float, float]]] = {}
    for e, span in zip(calls, spans, strict=True):
        steps.setdefault((e.get("epoch"), e.get("step")), []).append(span)
    return {
        "calls": len(calls),
        "spans": spans,
        "steps": list(steps.values()),
        "training": end - first,
        "idle": idle(spans, first) + max(0.0, end - max((e for _, e in spans), default=end)),
        "process": process,
        "call": sum(e["latency"] for e in calls) / max(1, len(calls)),
        "pool": json.loads((root / run / "state.json").read_text()).get("pool_digest"),
    }


ROWS = {"default": [], "difflib": ["--set", "evolution.embedding_model=difflib"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    a = parser.parse_args()
    from moscopt.testing.loopback import ServerProcess
    from moscopt.testing.scripted import write_project

    rows, pools = [], set()
    responder = "moscopt.testing.scripted:server_responder"
    with ServerProcess(a.latency, responder=responder) as server:
        url = server.url
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.repeats):
                for name, extra in ROWS.items():
                    root = Path(tmp) / f"p{i}-{name}"
                    root.mkdir()
                    write_project(root, REPO / "skills")
                    r = train(url, root, "runs/r", extra, a.epochs)
                    again = train(url, root, "runs/again", extra, a.epochs)
                    waves = critical_path(r["spans"], a.latency / 4)
                    per_step = [critical_path(s, a.latency / 4) for s in r["steps"]]
                    pools.add((name, r["pool"]))
                    rows.append(
                        (name, r["calls"], waves, sum(per_step) / len(per_step), r["training"],
                         r["idle"], r["call"], r["process"], waves * a.latency,
                         again["process"], again["calls"])
                    )  # fmt: skip
    print(f"latency {a.latency * 1000:.0f} ms, {a.epochs} epochs; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    head = ("config", "calls", "waves", "waves/step", "training s", "idle s", "call ms",
            "process s", "ideal s", "training/ideal", "process/ideal", "rerun s",
            "rerun calls")  # fmt: skip
    print("  ".join(f"{h:>14}" for h in head))
    for name, calls, waves, per_step, training, spare, call, process, ideal, rerun, hits in rows:
        cells = (name, str(calls), str(waves), f"{per_step:.1f}", f"{training:.2f}",
                 f"{spare:.2f}", f"{call * 1000:.0f}", f"{process:.2f}", f"{ideal:.2f}",
                 f"{training / ideal:.2f}", f"{process / ideal:.2f}", f"{rerun:.2f}",
                 str(hits))  # fmt: skip
        print("  ".join(f"{c:>14}" for c in cells))
    kinds = {n for n, _ in pools}
    print(f"final pools: {'one per config' if len(pools) == len(kinds) else 'they differ'}")


if __name__ == "__main__":
    main()
