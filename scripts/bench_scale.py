"""How moscopt's own cost grows with the pool, the run's length and the task set (prints).

    python scripts/bench_scale.py                    # N 4, 32, 128; 10 and 100 steps; 1,000 tasks
    python scripts/bench_scale.py --sizes 4,32,128,512 --steps 10,100,1000 --tasks 100,1000,10000

Every figure is moscopt's own work: the scripted world (`moscopt.testing.scripted`) is served at
zero latency by the loopback fake server in its own process (its CPU is not counted), and each
command runs as a user starts it, `python -m moscopt ...`, in a child process. Tokens are the
server's counts (whitespace words, as `usage` reports them).

1. Pool size. A project of `max(sizes) + 3` skills (the scripted world's three, then synthetic
   skills made of the seed skills' paragraphs, each with a topic of its own); `moscopt train
   --n N --k 2`, one epoch of 8 minibatches of 4 tasks over 40 tasks (32 train, 4 val, 4 test),
   evolution on, with the configuration a user gets (`default`: the diversity check embeds with
   MiniLM) and with `evolution.embedding_model=difflib`. Columns: `wall` (the process, spawn to
   exit), `cpu` (user + system of the process and its children, the embedding process
   included), `rss MB` (the peak resident set of the process), `calls`, `tok/call` (prompt
   tokens per call), `gate tok/task` (the gate's prompt tokens per routed task), and the time
   of `moscopt status`, `moscopt report` and `moscopt train --resume` (nothing left to do) on the
   finished run. `ratio` is wall / wall(N = smallest).
2. Gate policies at the largest N of the default row set: `llm` (the whole pool's table),
   `hybrid` (the familiarity router's shortlist of `router.shortlist` skills), `familiarity`
   (no routing call): gate tokens per task and the final validation score.
3. Run length. `moscopt train --n 4` for S steps (epochs of 10 minibatches, no evolution), then
   `status`, `report`, `log` and a resume; their time and the size of events.jsonl.
4. Task count. `moscopt eval` of T tasks (`--split all`, mode none, a fresh cache): wall, cpu,
   peak memory, and that memory per task.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

RESPONDER = "moscopt.testing.scripted:server_responder"
SPEC = """\
name: addition
description: "Scripted additions"
source:
  local:
    files: [addition.jsonl]
    fields: {{id: id, question: question, answer: answer}}
splits: {{train: {train}, val: {val}, test: {test}, seed: 1}}
grader: exact
answer_instructions: "End with FINAL ANSWER: <n>"
"""
TOPICS = (
    "invoices", "geometry", "recipes", "chess", "tax forms", "train timetables", "poetry",
    "SQL", "genetics", "weather", "contracts", "music theory", "orbits", "inventory",
    "elections", "typography", "sailing", "compilers", "dosages", "maps", "auctions",
    "knitting", "logic puzzles", "bird calls", "payroll", "carpentry", "chemistry", "law",
)  # fmt: skip


def measured(args: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """`run_cmd` with the child's own rusage (os.wait4 on the pid, not the cumulative one)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "HOME": str(cwd / "home")}
    env["PYTHONPATH"] = str(REPO)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moscopt", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ok:
        raise SystemExit(f"moscopt {' '.join(args)} failed:\n{err.decode()[-2000:]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,
    }


def synthetic_skill(i: int, bodies: list[str]) -> tuple[str, str]:
    """(description, body) of synthetic skill i: two seed skills' paragraphs and a topic."""
    rng = random.Random(i)
    topic = TOPICS[i % len(TOPICS)]
    first, second = rng.sample(bodies, 2)
    paragraphs = first.split("\n\n")[:3] + second.split("\n\n")[1:3]
    rng.shuffle(paragraphs)
    words = rng.sample(TOPICS, 4)
    body = (
        f"# Working on {topic} ({i})\n\n"
        f"Use this skill for tasks about {topic}, and about {', '.join(words)}.\n\n"
        + "\n\n".join(paragraphs)
        + f"\n\n- Check the {topic} facts twice.\n- State the unit.\n- Answer last.\n"
    )
    return f"Tasks about {topic}, variant {i}: {', '.join(words)}.", body


def write_project(root: Path, skills: int, tasks: int, split: tuple[int, int, int]) -> None:
    from moscopt.core.skills import Pool
    from moscopt.testing.scripted import write_project as scripted_project

    scripted_project(root, REPO / "skills")
    seeds = [s.body for s in Pool.load(REPO / "skills")]
    for i in range(max(0, skills - 3)):
        description, body = synthetic_skill(i, seeds)
        folder = root / "skills" / f"topic-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: topic-{i:04d}\ndescription: {json.dumps(description)}\n---\n\n{body}"
        )
    train, val, test = split
    (root / "addition.yaml").write_text(SPEC.format(train=train, val=val, test=test))
    rows = [
        {"id": f"a{i}", "question": f"Compute {i} + {i}.", "answer": str(2 * i)}
        for i in range(1, tasks + 1)
    ]
    (root / "addition.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def train_args(url: str, run: str, n: int, *extra: str) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", "--model", "openai/scripted",
        "--api-base", url, "--data", "addition.jsonl", "--n", str(n), "--k", "2",
        "--run", run, "--concurrency", "16", "--set", "optimizer.batch=4",
        "--set", "optimizer.minibatch=2", *extra,
    ]  # fmt: skip


def ledger(run: Path) -> dict[str, Any]:
    calls, prompt, gate_tokens, gate_calls = 0, 0, 0, 0
    with (run / "events.jsonl").open() as f:
        for line in f:
            e = json.loads(line)
            if e["type"] != "llm_call" or e.get("cache_hit"):
                continue
            calls += 1
            prompt += e.get("prompt_tokens", 0)
            if e.get("purpose") == "gate":
                gate_calls += 1
                gate_tokens += e.get("prompt_tokens", 0)
    return {"calls": calls, "tok": prompt / max(1, calls), "gate": gate_tokens, "gates": gate_calls}


def readers(root: Path, run: str) -> dict[str, float]:
    """Seconds of `status`, `report` and `log` on `run`."""
    report = ["report", "--run", run, "-o", str(root / "report.md"), "--force"]
    return {
        "status": measured(["status", "--run", run], root)["wall"],
        "report": measured(report, root)["wall"],
        "log": measured(["log", "--run", run], root)["wall"],
    }


CONFIGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "difflib": ("--set", "evolution.embedding_model=difflib"),
}


def pool_curve(url: str, tmp: Path, sizes: list[int], configs: list[str]) -> None:
    root = tmp / "pool"
    root.mkdir()
    write_project(root, max(sizes) + 3, 40, (32, 4, 4))
    print("\n1. pool size N (one epoch of 8 minibatches, 40 tasks, K 2, evolution on)")
    head = ("config", "N", "wall s", "ratio", "cpu s", "rss MB", "calls", "tok/call",
            "gate tok/task", "status s", "report s", "log s")  # fmt: skip
    print("  ".join(f"{h:>13}" for h in head))
    for config in configs:
        first = None
        for n in sizes:
            run = f"runs/{config}-{n}"
            cache = f"llm.cache_dir={root / 'caches' / run}"  # every answer a call
            extra = (*CONFIGS[config], "--epochs", "1", "--steps-per-epoch", "8", "--set", cache)
            m = measured(train_args(url, run, n, *extra), root)
            led = ledger(root / run)
            r = readers(root, run)
            first = first or m["wall"]
            cells = (config, n, f"{m['wall']:.2f}", f"{m['wall'] / first:.2f}",
                     f"{m['cpu']:.2f}", f"{m['rss']:.0f}", led["calls"], f"{led['tok']:.0f}",
                     f"{led['gate'] / max(1, led['gates']):.0f}", f"{r['status']:.2f}",
                     f"{r['report']:.2f}", f"{r['log']:.2f}")  # fmt: skip
            print("  ".join(f"{c!s:>13}" for c in cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,32,128")
    parser.add_argument("--configs", default="default,difflib")
    a = parser.parse_args()
    from moscopt.testing.loopback import ServerProcess

    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with ServerProcess(0.0, responder=RESPONDER) as server, tempfile.TemporaryDirectory() as tmp:
        sizes = [int(x) for x in a.sizes.split(",") if x]
        pool_curve(server.url, Path(tmp), sizes, a.configs.split(","))


if __name__ == "__main__":
    main()
