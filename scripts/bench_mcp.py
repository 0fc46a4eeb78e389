"""The MCP round trip of `moscopt mcp`: start-up to the first tool answer, and what a `status`
call costs, measured with the MCP SDK's own stdio client.

    python scripts/bench_mcp.py [--starts 5] [--calls 50]

Per start (a fresh `moscopt mcp` process in a scripted project): spawn to the end of the
initialize handshake, to the first `tools/list` answer, and to the first `status` answer (the
project's, no run yet). Then, on a finished run trained over MCP against the loopback server:
the median round trip of `status --run`, of a protocol `ping` on the same connection, and of
the same status work called in process (`moscopt.mcp.runs.run_status`), whose difference is
the MCP overhead per status call. Prints medians (and ranges) in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project

REPO = Path(__file__).resolve().parents[1]
TRAIN = {
    "benchmark": "addition.yaml", "model": "openai/scripted", "data": "addition.jsonl", "n": 3,
    "k": 2, "epochs": 1, "steps_per_epoch": 1, "no_evolution": True, "max_calls": 400,
    "wait": True, "run": "runs/bench",
}  # fmt: skip


def params(root: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "MOSCOPT_HOME")}
    env.update(OPENAI_API_KEY="sk-bench", PYTHONPATH=str(REPO))
    return StdioServerParameters(
        command=sys.executable, args=["-m", "moscopt", "mcp"], cwd=str(root), env=env
    )


async def one_start(root: Path) -> tuple[float, float, float]:
    t0 = time.perf_counter()
    async with Client(params(root), mode="legacy") as client:
        t1 = time.perf_counter()
        await client.list_tools()
        t2 = time.perf_counter()
        result = await client.call_tool("status", {"project": True})
        t3 = time.perf_counter()
        assert not result.is_error, result.content
    return t1 - t0, t2 - t0, t3 - t0


async def status_calls(root: Path, url: str, calls: int) -> dict[str, list[float]]:
    async with Client(params(root), mode="legacy") as client:
        done = await client.call_tool("train", {**TRAIN, "api_base": url})
        assert not done.is_error, done.content
        out: dict[str, list[float]] = {"status": [], "ping": []}
        for _ in range(calls):
            t = time.perf_counter()
            result = await client.call_tool("status", {"run": "runs/bench"})
            out["status"].append(time.perf_counter() - t)
            assert not result.is_error
            t = time.perf_counter()
            await client.send_ping()
            out["ping"].append(time.perf_counter() - t)
    return out


def in_process(root: Path, calls: int) -> list[float]:
    from moscopt.mcp.calls import Args
    from moscopt.mcp.runs import run_status

    os.chdir(root)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        run_status(Args({"run": "runs/bench"}), project=False)
        times.append(time.perf_counter() - t)
    return times


def ms(xs: list[float]) -> str:
    return (
        f"{1000 * statistics.median(xs):.1f} ms (range {1000 * min(xs):.1f}-{1000 * max(xs):.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        os.environ.setdefault("MOSCOPT_HOME", str(Path(tmp) / "home"))
        write_project(root, REPO / "skills")
        starts = [asyncio.run(one_start(root)) for _ in range(args.starts)]
        print(f"start-up, {args.starts} fresh processes (spawn ->):")
        print(f"  initialized          {ms([s[0] for s in starts])}")
        print(f"  first tools/list     {ms([s[1] for s in starts])}")
        print(f"  first status answer  {ms([s[2] for s in starts])}")
        with FakeServer(responder=server_responder) as server:
            rounds = asyncio.run(status_calls(root, server.url, args.calls))
        local = in_process(root, args.calls)
        status, ping = statistics.median(rounds["status"]), statistics.median(rounds["ping"])
        print(f"status of a finished run, {args.calls} calls on one connection:")
        print(f"  status over MCP      {ms(rounds['status'])}")
        print(f"  the same in process  {ms(local)}")
        print(f"  ping over MCP        {ms(rounds['ping'])}")
        overhead = status - statistics.median(local)
        print(f"  MCP overhead per status call: {1000 * overhead:.1f} ms (ping {1000 * ping:.1f})")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
