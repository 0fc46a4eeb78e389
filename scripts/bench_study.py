"""A study's runs at once under one cap: wall time against its longest run alone (prints).

    python scripts/bench_study.py [--latency 0.1] [--concurrency 8] [--budget 40] [--seeds 2]

The scripted world of the tests (`moscopt.testing.scripted`) is served by the fake
OpenAI-compatible server in its own process (its CPU is not ours), answering each request after
`--latency` seconds. `moscopt ablate` (full and two ablations, `--seeds` seeds: six runs; N 4,
K 2, one epoch of two steps, `--budget` calls per run, `--concurrency` requests in flight) runs
in a child process twice, each against a fresh server:

- one run at a time (`--runs-at-once 1`): each run's wall time there is that run alone (its
  training and its test evaluation, with the whole cap to itself); the longest is the yardstick;
- as a user gets it (the runs at once, sharing the cap);
- the longest run of the first, alone, as a study of its own (the same start-up and table).

Prints the wall times, wall / longest run alone (the issue's target: <= 2), the same for the
runs only (no start-up, no table), the most requests the server had in flight at once against
the cap, the child's peak resident memory, and whether the tables (wall times aside) are the
same, and the same but for the spending of runs the budget stopped (which varies even one
at a time: see `stable`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
CONFIG = "evolution:\n  embedding_model: difflib\noptimizer:\n  minibatch: 2\n"


def serve(latency: float) -> None:
    """The server process: prints its URL, serves until stdin closes, then prints its stats."""
    from moscopt.testing.fake_server import FakeServer
    from moscopt.testing.scripted import server_responder

    with FakeServer(latency=latency, responder=server_responder) as server:
        print(server.url, flush=True)
        sys.stdin.read()
        print(json.dumps(server.stats()), flush=True)


def study(a: argparse.Namespace, root: Path, name: str, *extra: str) -> dict[str, Any]:
    """One `moscopt ablate` in a child process against a fresh server: its wall time, the
    server's stats, the child's peak RSS and its table."""
    cmd = [sys.executable, str(HERE), "--serve", "--latency", str(a.latency)]
    server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    args = [
        sys.executable, "-m", "moscopt", "ablate", "--benchmark", "addition.yaml", "--data",
        "addition.jsonl", "--model", "openai/scripted", "--api-base", url, "--n", "4", "--k", "2",
        "--epochs", "1", "--steps-per-epoch", "2", "--concurrency", str(a.concurrency),
        "--budget-calls", str(a.budget), "--study", f"studies/{name}", "--json",
        *(extra or ("--seeds", str(a.seeds), "--only", a.only)),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(root / "home")}
    started = time.perf_counter()
    child = subprocess.Popen(
        args, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak memory
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss / 1024
    server.stdin.close()
    stats = json.loads(server.stdout.readline())
    server.wait(timeout=10)
    if child.returncode != 0:
        raise SystemExit(stderr.decode()[-3000:])
    table = json.loads((root / "studies" / name / "table.json").read_text())
    records = {
        p.stem: json.loads(p.read_text())
        for p in (root / "studies" / name / "records").glob("*-s[0-9]*[0-9].json")
    }
    lines = [json.loads(x) for x in stderr.decode().splitlines() if x.startswith('{"event"')]
    span = max((e["study"]["elapsed_seconds"] for e in lines), default=0.0)  # runs start..end
    return {
        "wall": wall,
        "span": span,
        "stats": stats,
        "rss": rss,
        "table": table,
        "records": records,
    }


def stable(table: dict[str, Any], *, spending: bool = True) -> dict[str, Any]:
    """The table without wall times; `spending=False`: nor the calls, tokens and cost of a row
    the budget stopped (with `--concurrency` > 1 the calls in flight when a run reaches its
    budget are abandoned, so those vary from one run to the next even one at a time)."""
    rows = []
    for r in table["rows"]:
        row = {k: v for k, v in r.items() if k != "wall_seconds"}
        if not spending and r["training"].get("stopped_at_budget"):
            row["training"] = {k: r["training"][k] for k in ("budget", "stopped_at_budget")}
        rows.append(row)
    return {**table, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--only", default="single-skill,reflect-edit")  # and full
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.serve:
        serve(a.latency)
        return
    from moscopt.core.resources import seed_skills_dir
    from moscopt.testing.scripted import write_project

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, seed_skills_dir(), CONFIG)
        shape = ("--seeds", str(a.seeds), "--only", a.only)
        one = study(a, root, "one-at-a-time", *shape, "--runs-at-once", "1")
        at_once = study(a, root, "at-once", *shape)
        longest_name, longest = max(
            ((n, r["wall_seconds"]) for n, r in one["records"].items()), key=lambda x: x[1]
        )
        conf, seed = longest_name.rsplit("-s", 1)
        # that run alone, as a study of its own (the same start-up and table as the others)
        alone = study(a, root, "alone", "--seeds", f"{seed},", "--only", conf)
    runs = len(one["records"])
    print(
        f"{runs} runs, --concurrency {a.concurrency}, {a.latency * 1000:.0f} ms per call, "
        f"budget {a.budget} calls, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"one at a time: wall {one['wall']:.1f} s, {one['stats']['requests']} requests, "
        f"peak in flight {one['stats']['max_in_flight']}/{a.concurrency}"
    )
    print(
        f"longest run alone: {longest_name}, {alone['wall']:.1f} s as a study of its own "
        f"({longest:.1f} s its run one at a time)"
    )
    print(
        f"at once:       wall {at_once['wall']:.1f} s, {at_once['stats']['requests']} requests, "
        f"peak in flight {at_once['stats']['max_in_flight']}/{a.concurrency}"
    )
    print(
        f"wall / longest run alone: {at_once['wall'] / alone['wall']:.2f} "
        f"(one at a time: {one['wall'] / alone['wall']:.2f})"
    )
    print(
        f"the runs only (first start to last record, without start-up and table, over that "
        f"run's own time): {at_once['span'] / longest:.2f} (one at a time: "
        f"{one['span'] / longest:.2f})"
    )
    print(f"peak RSS of the study process: {one['rss']:.0f} MiB one at a time, ", end="")
    print(f"{at_once['rss']:.0f} MiB at once")
    same = stable(one["table"]) == stable(at_once["table"])
    decided = stable(one["table"], spending=False) == stable(at_once["table"], spending=False)
    print(
        f"same table as one at a time: {'yes' if same else 'no'}; the same but for the "
        f"spending of runs the budget stopped: {'yes' if decided else 'NO'}"
    )
    for row in at_once["table"]["rows"]:
        print(" ", row["summary"])


if __name__ == "__main__":
    main()
