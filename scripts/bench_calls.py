"""LLM calls per optimization step, against the paper's O(B·T + N·|V| + |V|).

A scripted environment (no model, no network) where every rollout fails and every proposed
edit applies but does not help, so each step does the most work: B rollouts, then for each
skill active in a failure a reflection, a proposal and a validation on |V| tasks. Calls are
counted per phase-1 step from the fake LM's request log. Usage: python scripts/bench_calls.py
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Splits, get_benchmark
from moscopt.config import load_config
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine import initial_state
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import tasks


def respond(request: LMRequest) -> str:
    last = request.messages[-1]["content"]
    if "## Available skills" in last:
        names = [ln.split("|")[1].strip() for ln in last.splitlines() if ln.startswith("| ")][1:]
        k = int(last.split("Choose exactly ")[1].split()[0])
        return "ACTIVATE: " + ", ".join(names[:k])
    if "Propose small, targeted edits" in last or "routing rules" in last:
        tag = hashlib.sha256(last.encode()).hexdigest()[:8]
        return json.dumps(
            {"reasoning": "r", "edits": [{"op": "add", "anchor": "", "content": f"Note {tag}."}]}
        )
    if "diagnose" in last or "routing analysis" in last:
        return "- It fails."
    if "long-term memory" in last:
        return "- Nothing helped."
    return "FINAL ANSWER: 0"


def measure(n: int, k: int, b: int, v: int) -> dict[str, Any]:
    seeds = Pool.load(seed_skills_dir(), require_gate=True)
    pool = Pool(skills=seeds.skills[:n], gate=seeds.gate)
    config = load_config(
        None,
        {
            "pool.n": n,
            "pool.k": k,
            "optimizer.minibatch": b,
            "training.epochs": 1,
            "training.max_steps_per_epoch": 3,
            "evolution.enabled": False,
            "gating.edit_steps": 0,
        },
    )
    splits = Splits(train=tasks("train", 3 * b), val=tasks("val", v), test=tasks("test", 1))
    lm = FakeLM(responder=respond)
    marks: list[tuple[str, int]] = []

    def progress(e: dict[str, Any]) -> None:
        if e.get("event") in ("step", "phase"):
            marks.append((e["event"], len(lm.history)))

    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir.create(
            Path(tmp) / "run", config, pool, initial_state(config, pool, "x", splits)
        )
        trainer = make_trainer(
            run=run, config=config, benchmark=get_benchmark("offline"), splits=splits,
            agent_lm=lm, optimizer_lm=lm, seeds=seeds, progress=progress,
        )  # fmt: skip
        asyncio.run(trainer.train())
    first_step = next(i for i, (kind, _) in enumerate(marks) if kind == "phase")
    counts = [m[1] for m in marks[first_step:]]
    steps = [b2 - a for a, b2 in itertools.pairwise(counts)][:3]
    purposes = Counter(lm.purposes)
    t = 1  # single-turn agent (no tools)
    bound = b * t + n * v + v
    return {"N": n, "K": k, "B": b, "|V|": v, "calls/step": steps, "B·T+N·|V|+|V|": bound,
            "gate calls": purposes["gate"], "all calls": len(lm.history)}  # fmt: skip


def main() -> None:
    print("Each step: B rollouts (1 gate + T agent calls each); per edited skill: reflect,")
    print("propose, and |V| validation rollouts; at most max_targets (default K) skills a step.")
    for n, k, b, v in [
        (10, 3, 4, 10),
        (10, 3, 4, 20),
        (5, 2, 4, 10),
        (1, 1, 4, 10),
        (10, 10, 4, 10),
    ]:
        r = measure(n, k, b, v)
        per = r["calls/step"]
        mean = sum(per) / len(per)
        print(
            f"N={n:>2} K={k:>2} B={b} |V|={v:>2}: calls per step {per} (mean {mean:.0f}); "
            f"B·T+N·|V|+|V| = {r['B·T+N·|V|+|V|']}; ratio {mean / r['B·T+N·|V|+|V|']:.2f}"
        )


if __name__ == "__main__":
    main()
