"""How moscopt's own cost grows with the pool, the run's length and the task set (prints).

    python scripts/bench_scale.py           # N 4, 32, 128; 10 and 100 steps; 100 and 1,000 tasks
    python scripts/bench_scale.py --sizes 4,32,128,512 --steps 10,100,1000 --tasks 100,1000,10000

Every figure is moscopt's own work: the scripted world (`moscopt.testing.scripted`) is served at
zero latency by the loopback fake server in its own process (its CPU is not counted), and each
command runs as a user starts it, `python -m moscopt ...`, in a child process. Tokens are the
server's counts (whitespace words, as `usage` reports them).

1. Pool size. A project of `max(sizes) + 3` skills (the scripted world's three, then synthetic
   skills made of the seed skills' paragraphs, each with a topic of its own); `moscopt train
   --n N --k 2`, one epoch of 8 minibatches of 4 tasks over 40 tasks (32 train, 4 val, 4 test),
   evolution on, with the configuration a user gets (`default`: the diversity check embeds with
   MiniLM; a fresh cache folder per run, so every answer is a call and every vector computed:
   a project's first run) and with `evolution.embedding_model=difflib`. Columns: `wall` (the
   process, spawn to exit), `cpu` (user + system of the process and its children, the
   embedding process included), `rss MB` (the peak resident set of the process), `calls`,
   `tok/call` (prompt tokens per call), `gate tok/task` (the gate's prompt tokens per routed
   task), and the wall time of `moscopt status`, `moscopt report` and `moscopt log` on the
   finished run. `ratio` is wall / wall(N = smallest), `cpu ratio` the same for cpu.
2. Gate policies at the largest N of the default row set: `llm` (the whole pool's table),
   `hybrid` (the familiarity router's shortlist of `router.shortlist` skills), `familiarity`
   (no routing call): gate tokens per task and the final validation score.
3. Run length. `moscopt train --n 4` for S steps (epochs of 10 minibatches, no evolution), then
   `status`, `report`, `log` and a resume; their time and the size of events.jsonl.
4. Task count. `moscopt eval` of T tasks (`--split all`, mode none, a fresh cache): wall, cpu,
   peak memory, and that memory per task.
5. With `--accuracy P`: the diversity check's sampled mean (beyond `similarity.SAMPLE` skills)
   against the exact mean over every pair, with difflib and MiniLM (for MiniLM also the first
   `similarity.FIRST` skills of the sample alone, and the check as it runs: `staged`, the first
   half deciding alone when its estimate is `similarity.DECISIVE` from the threshold), on P pools of
   `--accuracy-size` skills drawn from the seed skills and mutations of them (as
   `calibrate_diversity.py` makes them), from alike to diverse: the error, and how many pools
   fall on the same side of the calibrated threshold (0.85; 0.412 for difflib) both ways.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
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
    """`python -m moscopt *args` in `cwd`: wall s, cpu s (the process's own rusage, os.wait4
    on its pid, plus its children's, `watch_children`) and peak rss MB; exit codes `ok`."""
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
    seen: dict[int, float] = {}  # the children's CPU (the embedding process), last seen
    done = threading.Event()
    watcher = threading.Thread(target=watch_children, args=(proc.pid, seen, done), daemon=True)
    watcher.start()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ok:
        raise SystemExit(f"moscopt {' '.join(args)} failed:\n{err.decode()[-2000:]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime + sum(seen.values()),
        "rss": usage.ru_maxrss / 1024,
    }


def watch_children(pid: int, seen: dict[int, float], done: threading.Event) -> None:
    """Every 50 ms until `done`: the CPU seconds of each process whose parent is `pid` (from
    /proc: the embedding process is never waited for, so the parent's rusage misses it)."""
    tick = os.sysconf("SC_CLK_TCK")
    while not done.wait(0.05):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:  # ppid; utime and stime are fields 14 and 15
                seen[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick


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
    """Calls (not from the cache), prompt tokens per call, and the gate's and agent's share."""
    calls, prompt, gate_tokens, gate_calls, agent = 0, 0, 0, 0, 0
    with (run / "events.jsonl").open() as f:
        for line in f:
            e = json.loads(line)
            if e["type"] != "llm_call" or e.get("cache_hit"):
                continue
            calls += 1
            prompt += e.get("prompt_tokens", 0)
            agent += e.get("purpose") == "agent"
            if e.get("purpose") == "gate":
                gate_calls += 1
                gate_tokens += e.get("prompt_tokens", 0)
    return {"calls": calls, "tok": prompt / max(1, calls), "gate": gate_tokens,
            "gates": gate_calls, "agent": agent, "prompt": prompt}  # fmt: skip


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
    head = ("config", "N", "wall s", "ratio", "cpu s", "cpu ratio", "rss MB", "calls", "tok/call",
            "gate tok/task", "status s", "report s", "log s")  # fmt: skip
    print("  ".join(f"{h:>13}" for h in head))
    for config in configs:
        first: tuple[float, float] | None = None
        for n in sizes:
            run = f"runs/{config}-{n}"
            cache = f"llm.cache_dir={root / 'caches' / run}"  # every answer a call
            extra = (*CONFIGS[config], "--epochs", "1", "--steps-per-epoch", "8", "--set", cache)
            m = measured(train_args(url, run, n, *extra), root)
            led = ledger(root / run)
            r = readers(root, run)
            first = first or (m["wall"], m["cpu"])
            cells = (config, n, f"{m['wall']:.2f}", f"{m['wall'] / first[0]:.2f}",
                     f"{m['cpu']:.2f}", f"{m['cpu'] / first[1]:.2f}", f"{m['rss']:.0f}",
                     led["calls"], f"{led['tok']:.0f}",
                     f"{led['gate'] / max(1, led['gates']):.0f}", f"{r['status']:.2f}",
                     f"{r['report']:.2f}", f"{r['log']:.2f}")  # fmt: skip
            print("  ".join(f"{c!s:>13}" for c in cells), flush=True)


GATES: dict[str, tuple[str, ...]] = {
    "llm": (),
    "hybrid": ("--gate", "hybrid", "--set", "router.embedding_model=hashing"),
    "familiarity": ("--gate", "familiarity", "--set", "router.embedding_model=hashing"),
}


def gate_policies(url: str, tmp: Path, sizes: list[int]) -> None:
    """Gate tokens per routed task and the final validation score, per policy and N."""
    root = tmp / "gates"
    root.mkdir()
    write_project(root, max(sizes) + 3, 40, (32, 4, 4))
    print("\n2. gate policies (the same runs, evolution off, router features: hashing)")
    head = ("gate", "N", "wall s", "calls", "gate calls", "gate tok/task", "tok/task", "val")
    print("  ".join(f"{h:>13}" for h in head))
    for gate, flags in GATES.items():
        for n in sizes:
            run = f"runs/{gate}-{n}"
            cache = f"llm.cache_dir={root / 'caches' / run}"
            extra = (*flags, "--epochs", "1", "--steps-per-epoch", "8", "--no-evolution")
            m = measured(train_args(url, run, n, *extra, "--set", cache), root)
            led = ledger(root / run)
            state = json.loads((root / run / "state.json").read_text())
            val = state["val_history"][-1]["score"] if state.get("val_history") else None
            tasks = led["agent"] or 1
            cells = (gate, n, f"{m['wall']:.2f}", led["calls"], led["gates"],
                     f"{led['gate'] / tasks:.0f}", f"{led['prompt'] / tasks:.0f}",
                     "" if val is None else f"{val:.2f}")  # fmt: skip
            print("  ".join(f"{c!s:>13}" for c in cells), flush=True)


def run_lengths(url: str, tmp: Path, steps: list[int]) -> None:
    """Runs stopped by `--max-calls` after about S steps: readers' time and a resume's."""
    root = tmp / "length"
    root.mkdir()
    write_project(root, 4 + 3, 40, (40, 4, 0))
    print("\n3. run length (N 4, K 2, evolution off; each run stopped by --max-calls near S steps)")
    head = ("steps", "events", "log MB", "train s", "status s", "status cpu", "report s",
            "report cpu", "log s", "resume s", "resume cpu")  # fmt: skip
    print("  ".join(f"{h:>11}" for h in head))
    # calls = base (the first validation) + steps x per_step: measured 16.6 calls a step after
    # about 90 before the first (10,000 calls: 600 steps); per_step refined by each run
    base, per_step = 90, 16.6
    for target in steps:
        run = f"runs/s{target}"
        budget = str(round(base + target * per_step))
        cache = f"llm.cache_dir={root / 'caches' / run}"
        extra = ("--epochs", "10000", "--steps-per-epoch", "10", "--no-evolution",
                 "--max-calls", budget, "--set", cache, "--no-certificate")  # fmt: skip
        m = measured(train_args(url, run, 4, *extra), root, ok=(1,))
        state = json.loads((root / run / "state.json").read_text())
        done = max(1, int(state["step"]))
        per_step = max(1.0, (int(budget) - base) / done)
        events = root / run / "events.jsonl"
        lines = sum(1 for _ in events.open())
        report = ["report", "--run", run, "-o", str(root / "report.md"), "--force"]
        st, rp = measured(["status", "--run", run], root), measured(report, root)
        lg = measured(["log", "--run", run], root)
        rs = measured(train_args(url, run, 4, *extra, "--resume"), root, ok=(1,))
        cells = (done, lines, f"{events.stat().st_size / 1e6:.1f}", f"{m['wall']:.1f}",
                 f"{st['wall']:.2f}", f"{st['cpu']:.2f}", f"{rp['wall']:.2f}",
                 f"{rp['cpu']:.2f}", f"{lg['wall']:.2f}", f"{rs['wall']:.2f}",
                 f"{rs['cpu']:.2f}")  # fmt: skip
        print("  ".join(f"{c!s:>11}" for c in cells), flush=True)


def task_counts(url: str, tmp: Path, counts: list[int]) -> None:
    """`moscopt eval` of T tasks: wall, cpu, peak memory."""
    print("\n4. task count (moscopt eval --split all, mode none, a fresh cache each)")
    head = ("tasks", "wall s", "cpu s", "rss MB", "ms/task", "KB/task over 100")
    print("  ".join(f"{h:>16}" for h in head))
    base = None
    for t in counts:
        root = tmp / f"tasks-{t}"
        root.mkdir()
        write_project(root, 4, t, (t - 2, 1, 1))
        args = ["eval", "--benchmark", "addition.yaml", "--data", "addition.jsonl",
                "--model", "openai/scripted", "--api-base", url, "--split", "all",
                "--concurrency", "32", "--set", f"llm.cache_dir={root / 'cache'}"]  # fmt: skip
        m = measured(args, root)
        base = base or (t, m["rss"])
        extra = (m["rss"] - base[1]) * 1024 / max(1, t - base[0]) if t > base[0] else 0.0
        cells = (t, f"{m['wall']:.1f}", f"{m['cpu']:.1f}", f"{m['rss']:.0f}",
                 f"{m['wall'] * 1000 / t:.2f}", f"{extra:.2f}")  # fmt: skip
        print("  ".join(f"{c!s:>16}" for c in cells), flush=True)


def accuracy(pools: int, size: int, model: str) -> None:
    """The sampled mean against the exact mean over every pair, on pools of `size` skills
    drawn from the seed skills and mutations of them (`calibrate_diversity.mutations`), from
    alike to diverse; and whether each is on the same side of the calibrated threshold."""
    sys.path.insert(0, str(HERE.parent))
    from calibrate_diversity import mutations, seed_bodies

    from moscopt.optimizer import similarity as sim

    bodies = list(seed_bodies().values())
    rng = random.Random(0)
    print(f"\n5. the sampled mean against every pair ({pools} pools of {size} skills)")
    head = ("estimate", "pools", "exact range", "mean |error|", "max |error|", "same side")
    print("  ".join(f"{h:>16}" for h in head))
    made = []
    for p in range(pools):
        share = p / max(1, pools - 1)  # of the pool that are mutations of one seed
        base = bodies[p % len(bodies)]
        texts = []
        for _ in range(size):
            source = base if rng.random() < share else rng.choice(bodies)
            texts.append(rng.choice(mutations(source, rng.choice(bodies), rng)))
        made.append(texts)
    for method in dict.fromkeys(("difflib", model)):
        rows = []
        for p, texts in enumerate(made):
            names = [f"skill-{p}-{i}" for i in range(size)]
            if method == "difflib":
                every = [sim.ratio(a, b) for a, b in itertools.combinations(texts, 2)]
            else:
                vectors = sim.vectors_for(method, texts)
                if vectors is None:
                    print(f"  {method}: not available")
                    break
                every = sim.pair_cosines(vectors)
            exact = sum(every) / len(every)
            if method == "difflib":  # the pairs the method draws, over the whole pool
                used_pairs = set(sim.sampled_pairs(names, sim.DIFFLIB_PAIRS))
            else:  # the pairs of its sample of skills
                picked = sim.sample_indices(names)
                used_pairs = set(itertools.combinations(picked, 2))
            cosine = dict(zip(itertools.combinations(range(size), 2), every, strict=True))
            plain = [cosine[ij] for ij in sorted(used_pairs)]
            got, used = sim.mean_pairwise_similarity(texts, method, names)
            limit = sim.threshold_for(used, 0.85)
            found = {"plain": sum(plain) / len(plain), "adjusted": got}
            if method != "difflib":  # the first half of the sample, and the check as it runs
                first = sim.sample_indices(names, sim.FIRST)
                half = list(itertools.combinations(first, 2))
                found[f"first {sim.FIRST}"] = sim.estimate(texts, half, [cosine[ij] for ij in half])
                found["staged"], _ = sim.mean_pairwise_similarity(texts, method, names, 0.85)
            rows.append((exact, found, limit))
        if rows:
            label = method.split("/")[-1]
            for name in rows[0][1]:
                errors = [abs(r[1][name] - r[0]) for r in rows]
                same = sum((r[1][name] > r[2]) == (r[0] > r[2]) for r in rows)
                cells = (f"{label} {name}", len(rows),
                         f"{min(r[0] for r in rows):.3f}..{max(r[0] for r in rows):.3f}",
                         f"{sum(errors) / len(errors):.4f}", f"{max(errors):.4f}",
                         f"{same}/{len(rows)}")  # fmt: skip
                print("  ".join(f"{c!s:>16}" for c in cells), flush=True)


def numbers(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,32,128", help="pool sizes N (section 1)")
    parser.add_argument("--configs", default="default,difflib")
    parser.add_argument("--gate-sizes", default="4,32,128", help="N for section 2 ('': skip)")
    parser.add_argument("--steps", default="10,100", help="run lengths (section 3, '': skip)")
    parser.add_argument("--tasks", default="100,1000", help="task counts (section 4, '': skip)")
    parser.add_argument("--only", default="1,2,3,4", help="sections to run")
    parser.add_argument("--accuracy", type=int, default=0, help="section 5: this many pools")
    parser.add_argument("--accuracy-size", type=int, default=96)
    a = parser.parse_args()
    from moscopt.testing.loopback import ServerProcess

    only = set(a.only.split(","))
    # moscopt's bytecode, as an install has it: without it (PYTHONDONTWRITEBYTECODE, a read-only
    # checkout) each command compiles ~120 modules, about 0.45 s of CPU not moscopt's own
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "moscopt")], check=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with ServerProcess(0.0, responder=RESPONDER) as server, tempfile.TemporaryDirectory() as tmp:
        if "1" in only:
            pool_curve(server.url, Path(tmp), numbers(a.sizes), a.configs.split(","))
        if "2" in only and a.gate_sizes:
            gate_policies(server.url, Path(tmp), numbers(a.gate_sizes))
        if "3" in only and a.steps:
            run_lengths(server.url, Path(tmp), numbers(a.steps))
        if "4" in only and a.tasks:
            task_counts(server.url, Path(tmp), numbers(a.tasks))
    if a.accuracy:
        from moscopt.embedding import MINILM

        accuracy(a.accuracy, a.accuracy_size, MINILM)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
