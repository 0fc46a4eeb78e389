"""How long `moscopt train` takes to exit after Ctrl-C while a slow step runs off the event loop
(prints; no assertion).

    python scripts/bench_interrupt.py [--repeats 5]

The scripted project of the tests (`moscopt.testing.scripted`) is trained against the loopback
server with a custom grader that blocks for an hour once it is called (standing in for a model
loading, an embedding or a local generation in a worker thread). As soon as the grader has
started (progress, not time) the child gets SIGINT; the figure is the time from the signal to the
child's exit, with its exit code. Python alone would wait for the worker thread (an hour);
`moscopt.cli.interrupt` exits within its `GRACE` (0.5 s) plus the process's own teardown.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from moscopt.testing import FakeServer
from moscopt.testing.scripted import ADDITION_SPEC, server_responder, write_project

REPO = Path(__file__).resolve().parents[1]
STUCK = "import pathlib, time\n\ndef grade(task, response):\n" + (
    '    pathlib.Path("grading-started").touch()\n    time.sleep(3600)\n    return 1.0\n'
)


def once(url: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, REPO / "skills")
        spec = ADDITION_SPEC.replace("grader: exact", "grader: custom\ngrader_entry: stuck:grade")
        (root / "addition.yaml").write_text(spec)
        (root / "stuck.py").write_text(STUCK)
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{root}", "OPENAI_API_KEY": "sk-x"}
        args = [
            sys.executable, "-m", "moscopt", "train", "--benchmark", "addition.yaml", "--data",
            "addition.jsonl", "--model", "openai/scripted", "--api-base", url, "--n", "3", "--k",
            "2", "--epochs", "1", "--no-evolution",
        ]  # fmt: skip
        proc = subprocess.Popen(
            args, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while not (root / "grading-started").exists():
            if proc.poll() is not None:
                raise SystemExit(f"the run ended before grading (exit {proc.returncode})")
            time.sleep(0.005)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return 60.0, -1
        return time.perf_counter() - sent, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    seconds = []
    with FakeServer(responder=server_responder) as server:
        for i in range(args.repeats):
            took, code = once(server.url)
            seconds.append(took)
            print(f"run {i + 1}: exit {code} {took:.2f} s after SIGINT")
    print(
        f"Ctrl-C to exit: median {statistics.median(seconds):.2f} s, worst {max(seconds):.2f} s "
        f"over {len(seconds)} runs (load {load} at the start)"
    )


if __name__ == "__main__":
    main()
