"""What a study costs beyond its LLM calls: `moscopt ablate` on the loopback scripted world.

The fake server answers every call after a fixed latency, one call at a time
(`--concurrency 1`), so the ideal wall time of the study is its calls times the latency; the
rest is moscopt (training, evaluation, the study's bookkeeping, the table). Prints the study's
runs, calls, wall time, the overhead per call and the table's summary lines.

Usage: python scripts/bench_study.py [--latency 0.02] [--seeds 3] [--budget 42]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.core.resources import seed_skills_dir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder, write_project

CONFIG = "evolution:\n  embedding_model: difflib\noptimizer:\n  minibatch: 2\n"
ROWS = "single-skill,reflect-edit,static,no-skill"  # and full (no row needs a special prompt)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=42)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, seed_skills_dir(), CONFIG)
        spec = root / "addition.yaml"
        spec.write_text(spec.read_text().replace("train: 8, val: 4", "train: 4, val: 2"))
        with FakeServer(responder=server_responder, latency=args.latency) as server:
            started = time.perf_counter()
            result = CliRunner().invoke(app, [
                "ablate", "--benchmark", str(spec), "--data", str(root / "addition.jsonl"),
                "--model", "openai/scripted", "--api-base", server.url, "--config",
                str(root / "moscopt.yaml"), "--n", "3", "--k", "2", "--epochs", "1",
                "--steps-per-epoch", "2", "--concurrency", "1", "--budget-calls",
                str(args.budget), "--seeds", str(args.seeds), "--only", ROWS,
                "--study", str(root / "study"),
            ])  # fmt: skip
            wall = time.perf_counter() - started
            calls = server.count()
        if result.exit_code != 0:
            raise SystemExit(result.output)
        table = json.loads((root / "study" / "table.json").read_text())
    runs = len(table["rows"]) * args.seeds
    ideal = calls * args.latency
    print(f"{runs} runs ({len(table['rows'])} configurations x {args.seeds} seeds), {calls} calls")
    print(f"wall {wall:.1f} s, ideal {ideal:.1f} s at {args.latency * 1000:.0f} ms per call")
    print(f"moscopt's time per call: {(wall - ideal) / max(1, calls) * 1000:.1f} ms")
    for row in table["rows"]:
        print(" ", row["summary"])


if __name__ == "__main__":
    main()
