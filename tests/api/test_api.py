"""The library API: train, evaluate, export and route with Python tasks, a grader function and
the caller's LM (a fake at the LM seam, answering by the call's purpose)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import moscopt
from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.lm.base import LMRequest
from moscopt.testing import FakeLM
from moscopt.testing.scripted import MAGIC, edit, gold_of, skill_name

# 30 rows: 6 validation tasks, the fewest on which an edit can show itself better (issue 37)
ROWS = [{"id": f"t{i}", "question": f"Compute {i} + {i}.", "answer": str(2 * i)} for i in range(30)]
CONFIG = {
    "pool.n": 3,
    "pool.k": 2,
    "training.epochs": 1,
    "training.max_steps_per_epoch": 2,
    "optimizer.minibatch": 2,
    "evolution.enabled": False,
    "llm.concurrency": 2,
}


def grade(row: dict[str, Any], response: str) -> bool:
    return response.strip().endswith(f"FINAL ANSWER: {row['answer']}")


def agent(request: LMRequest) -> str:
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    return f"FINAL ANSWER: {gold_of(request.messages[-1]['content'])}" if MAGIC in system else "?"


def propose(request: LMRequest) -> str:
    prompt = "\n".join(m["content"] for m in request.messages)
    if skill_name(prompt) == "careful-computation":
        return edit("", MAGIC)
    return edit("no such anchor", "x")


def world() -> FakeLM:
    return FakeLM(
        routes={
            "gate": lambda r: "ACTIVATE: careful-computation, detail-verifier",
            "agent": agent,
            "reflect": lambda r: "- It never double-checks the final number.",
            "merge": lambda r: "- It never double-checks.",
            "propose": propose,
            "memory": lambda r: "- Explicit checks helped.",
            "budget": lambda r: "L: 3",
        }
    )


def pool(seed_dir: Path) -> Pool:
    seeds = Pool.load(seed_dir, require_gate=True)
    names = ("careful-computation", "cautious-planner", "detail-verifier")
    return Pool(skills=tuple(seeds.get(n) for n in names), gate=seeds.gate)


def test_train_evaluate_export_route(tmp_path: Path, seed_dir: Path) -> None:
    lm = world()
    result = moscopt.train(
        ROWS, grader=grade, skills=pool(seed_dir), config=CONFIG, lm=lm, run_dir=tmp_path / "run"
    )
    assert isinstance(result, moscopt.TrainResult)
    assert result.status == "done" and (result.before, result.after) == (0.0, 1.0)
    assert MAGIC in result.pool.get("careful-computation").body and result.accepted >= 1
    assert result.calls == lm.stats.calls > 0

    trained = moscopt.evaluate(ROWS, grader=grade, skills=result.run_dir, config=CONFIG, lm=lm)
    baseline = moscopt.evaluate(ROWS, grader=grade, config=CONFIG, lm=lm)
    assert isinstance(trained, moscopt.EvalReport)
    assert (trained.score, baseline.score) == (1.0, 0.0) and trained.tasks == len(trained.rollouts)

    static = moscopt.export(result.run_dir, "static", tasks=ROWS, grader=grade)
    assert (static.out / "ROUTING.md").is_file() and static.manifest.mode == "static"
    routed = moscopt.route("Compute 5 + 5.", export_dir=static.out)
    assert routed.source == "static" and len(routed.skills) == 2
    by_gate = moscopt.route("Compute 5 + 5.", run_dir=result.run_dir, lm=lm)
    assert by_gate.skills == ("careful-computation", "detail-verifier")
    assert moscopt.evaluate(ROWS, grader=grade, skills=static.out, lm=lm).score == 1.0


def test_a_function_is_an_lm_and_tasks_may_come_split() -> None:
    seen: list[int] = []

    def my_model(messages: list[dict[str, str]]) -> str:
        seen.append(len(messages))
        return f"FINAL ANSWER: {gold_of(messages[-1]['content'])}"

    split = {"train": ROWS[:4], "val": ROWS[4:6], "test": ROWS[6:12]}
    report = moscopt.evaluate(split, grader="numeric", lm=my_model)
    assert report.score == 1.0 and report.tasks == 6 and seen


def test_bad_input_is_a_user_error_before_any_call() -> None:
    lm = FakeLM()
    with pytest.raises(UserError, match="question"):
        moscopt.evaluate([{"answer": "1"}], lm=lm)
    with pytest.raises(UserError, match="unknown grader"):
        moscopt.evaluate(ROWS, grader="fuzzy", lm=lm)
    with pytest.raises(UserError, match=r"field 'pool\.k'"):
        moscopt.evaluate(ROWS, config={"pool.k": 0}, lm=lm)
    with pytest.raises(UserError, match="unknown split"):
        moscopt.evaluate(ROWS, split="dev", lm=lm)
    assert lm.history == []


def test_importing_moscopt_stays_cheap() -> None:
    code = (
        "import sys, moscopt; moscopt.__version__; "
        "heavy = [m for m in ('moscopt.api', 'moscopt.optimizer.engine', 'litellm', 'pydantic') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
