"""Memory of reading a large data file with `--limit`, and of evaluating many tasks.

    python scripts/bench_memory.py data [--mb 200] [--row-kb 2] [--limit 8]
    python scripts/bench_memory.py eval [--tasks 2000] [--reply-kb 80]

`data` writes a JSONL file of about `--mb` megabytes (rows of `--row-kb` KB) and a benchmark spec
for it in a temporary folder, then loads it in a fresh interpreter as `moscopt train --data FILE
--limit N` does (`Benchmark.load`). `eval` evaluates `--tasks` tasks whose rollouts carry about
`--reply-kb` KB each (an agent stub, no model) into a results file, as `moscopt eval --out` does.

Each measurement runs in its own interpreter and prints its resident set size (RSS, from
/proc/self/status) after the imports and its peak (`ru_maxrss`) at the end, in MB. Point
PYTHONPATH at another checkout to measure that code (an `evaluate` without `out` is measured
the way its runner used it: the rollouts held, then written at the end).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC = """\
name: bigdata
description: "Rows for the memory benchmark"
source:
  local:
    files: [big.jsonl]
    fields: {id: id, question: question, answer: answer}
splits: {train: 100, val: 20, test: 50, seed: 1}
grader: exact
"""

DATA_CHILD = """
import json, resource, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from moscopt.benchmarks import get_benchmark
spec, data, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
bench = get_benchmark(spec)
before = rss()
splits = bench.load(data=data, limit=limit)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_mb": round(before, 1), "peak_mb": round(peak, 1),
                  "rss_after_mb": round(rss(), 1), "tasks": len(splits["all"])}))
"""

EVAL_CHILD = """
import asyncio, inspect, json, resource, sys
from pathlib import Path
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from moscopt.benchmarks import Task
from moscopt.agent.evaluate import evaluate
from moscopt.agent.harness import Rollout
n, reply, out = int(sys.argv[1]), int(sys.argv[2]) * 1024, Path(sys.argv[3])

class Agent:
    async def run(self, task, *, sample=0):
        await asyncio.sleep(0)
        text = f"{task.id} " + "y" * reply
        messages = [{"role": "user", "content": task.prompt}]
        messages.append({"role": "assistant", "content": text})
        return Rollout(task.id, (), "none", messages, text, None, float(int(task.id) % 2))

tasks = [Task(str(i), "t", f"task {i}", str(i)) for i in range(n)]
before = rss()
if "out" in inspect.signature(evaluate).parameters:
    result = asyncio.run(evaluate(Agent(), tasks, concurrency=16, out=out))
else:  # the code before streaming: the runner held every rollout, then wrote the file
    result = asyncio.run(evaluate(Agent(), tasks, concurrency=16))
    lines = [json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True) for r in result.rollouts]
    out.write_text("\\n".join(lines) + "\\n")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_mb": round(before, 1), "peak_mb": round(peak, 1),
                  "rss_after_mb": round(rss(), 1), "score": result.summary()["score"],
                  "file_mb": round(out.stat().st_size / 2**20, 1)}))
"""


def write_data(folder: Path, mb: int, row_kb: int) -> tuple[Path, Path]:
    (folder / "big.yaml").write_text(SPEC)
    pad = "x" * (row_kb * 1024)
    target = mb * 2**20
    written = 0
    with open(folder / "big.jsonl", "w") as f:
        i = 0
        while written < target:
            line = json.dumps({"id": f"r{i}", "question": f"Row {i}. {pad}", "answer": "0"}) + "\n"
            f.write(line)
            written += len(line)
            i += 1
    return folder / "big.yaml", folder / "big.jsonl"


def child(code: str, cwd: str, *args: str) -> dict[str, float]:
    done = subprocess.run(  # not from the checkout's folder: PYTHONPATH says which code runs
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def which(cwd: str) -> str:
    """Where the measured interpreter imports moscopt from."""
    code = "import moscopt; print(moscopt.__file__)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    data = sub.add_parser("data")
    data.add_argument("--mb", type=int, default=200)
    data.add_argument("--row-kb", type=int, default=2)
    data.add_argument("--limit", type=int, default=8)
    ev = sub.add_parser("eval")
    ev.add_argument("--tasks", type=int, default=2000)
    ev.add_argument("--reply-kb", type=int, default=80)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.what == "data":
            spec, path = write_data(Path(tmp), args.mb, args.row_kb)
            size = path.stat().st_size / 2**20
            result = child(DATA_CHILD, tmp, str(spec), str(path), str(args.limit))
            print(f"code: {which(tmp)}\ndata: {size:.0f} MB JSONL, --limit {args.limit}: {result}")
        else:
            out = Path(tmp) / "eval.jsonl"
            result = child(EVAL_CHILD, tmp, str(args.tasks), str(args.reply_kb), str(out))
            what = f"{args.tasks} tasks, ~{args.reply_kb} KB each"
            print(f"code: {which(tmp)}\neval: {what}: {result}")


if __name__ == "__main__":
    main()
