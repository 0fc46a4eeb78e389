"""Start-up time of the command line (target: < 0.5 s for `--help` and `status`).

Runs each command in a fresh interpreter several times and prints the median wall time, plus
the interpreter's own start-up for reference. Usage: python scripts/bench_cli.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def median_seconds(cmd: list[str], repeat: int, cwd: Path) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        subprocess.run([py, "-m", "moscopt", "init", str(project)], check=True, capture_output=True)
        env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
        rows = [
            ("python -c pass", [py, "-c", "pass"]),
            ("moscopt --help", [py, "-m", "moscopt", "--help"]),
            ("moscopt status", [py, "-m", "moscopt", "status"]),
        ]
        print(f"median of {args.repeat} runs ({env_note})")
        for label, cmd in rows:
            print(f"  {label:<18} {median_seconds(cmd, args.repeat, project) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
