"""A scripted environment for trainer tests: the agent succeeds iff a magic rule is in a skill.

The responder is a pure function of the request, so an interrupted and resumed run sees exactly
the answers an uninterrupted one does.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from moscopt.app.workspace import make_trainer
from moscopt.benchmarks import Benchmark, Splits, Task, get_benchmark
from moscopt.config import Config, load_config
from moscopt.core.skills import Pool
from moscopt.lm.base import LMRequest
from moscopt.optimizer.engine import initial_state
from moscopt.run.rundir import RunDir
from moscopt.testing.fake_lm import FakeLM

MAGIC = "Always double-check the final number."
VAGUE = "Be vague about the method."


def tasks(prefix: str, n: int) -> list[Task]:
    return [
        Task(
            f"{prefix}-{i}",
            "offline",
            f"Compute {i} + {i}.\n\nEnd with FINAL ANSWER: <n>",
            str(2 * i),
        )
        for i in range(1, n + 1)
    ]


def splits(n_train: int = 4, n_val: int = 4, n_test: int = 2) -> Splits:
    return Splits(
        train=tasks("train", n_train), val=tasks("val", n_val), test=tasks("test", n_test)
    )


def gold_of(prompt: str) -> str:
    m = re.search(r"Compute (\d+) \+ (\d+)", prompt)
    return str(int(m.group(1)) + int(m.group(2))) if m else "?"


def skill_name(prompt: str) -> str:
    m = re.search(r"^name: (\S+)$", prompt, re.MULTILINE)
    return m.group(1) if m else "?"


def edit(anchor: str, content: str, op: str = "add") -> str:
    return json.dumps(
        {"reasoning": "r", "edits": [{"op": op, "anchor": anchor, "content": content}]}
    )


def _gate(request: LMRequest) -> str:
    return "ACTIVATE: careful-computation, detail-verifier"


def _reflect(request: LMRequest) -> str:
    return "- The agent never double-checks the final number.\n- It rushes."


def _propose(request: LMRequest) -> str:
    """careful-computation: first a regressing (useless) edit that must be rejected, then — once
    the rejection is shown to the proposal — the rule; other skills: an anchor matching nothing."""
    last = request.messages[-1]["content"]
    if skill_name(last) == "careful-computation":
        return edit("", MAGIC if VAGUE in last else VAGUE)
    return edit("this anchor does not exist", "x")


def _child(request: LMRequest) -> str:
    name = "child-" + hashlib.sha256(request.messages[-1]["content"].encode()).hexdigest()[:6]
    body = "# Child\n\n1. Plan.\n2. Compute.\n3. Check.\n4. Answer.\n"
    return json.dumps({"name": name, "description": "A derived skill.", "body": body})


def _agent(request: LMRequest) -> str:
    msgs = request.messages
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    if MAGIC in system:
        return f"Careful.\nFINAL ANSWER: {gold_of(msgs[-1]['content'])}"
    return "FINAL ANSWER: 0"


# The scripted world by the purpose of each call (FakeLM(routes=ROUTES)): what it answers
# depends on the skills' text in the request, never on the wording of moscopt's prompts.
ROUTES: dict[str, Callable[[LMRequest], str]] = {
    "gate": _gate,
    "reflect-skill": _reflect,
    "reflect-gate": lambda r: "- Planner is never used for arithmetic.",
    "merge": lambda r: r.messages[-1]["content"].split("### Analysis 1\n", 1)[-1],
    "propose-skill": _propose,
    "propose-gate": lambda r: edit("", "Prefer careful-computation for arithmetic."),
    "memory": lambda r: "- Adding an explicit double-check helped.\n- Vague advice did not.",
    "evolve": _child,
    "budget": lambda r: "L: 3",
    "agent": _agent,
}

# The loopback server sees only the HTTP body, which carries no purpose: there (and only
# there) the purpose is recognised from the prompt's opening words.
_OPENINGS = (
    ("## Available skills", "gate"),
    ("diagnose what the skill fails", "reflect-skill"),
    ("Propose small, targeted edits that fix the failure", "propose-skill"),
    ("routing analysis", "reflect-gate"),
    ("routing rules", "propose-gate"),
    ("long-term memory", "memory"),
    ("new skill", "evolve"),
    ("fresh skill", "evolve"),
    ("edit budget", "budget"),
)


def purpose_of(request: LMRequest) -> str:
    """The purpose of a request whose caller cannot tell it (the loopback server's body), from
    its prompt's opening words ("agent" when none matches)."""
    last = request.messages[-1]["content"]
    return next((p for opening, p in _OPENINGS if opening in last), "agent")


def respond(request: LMRequest) -> str:
    """`ROUTES` for a caller that cannot tell the purpose (the loopback server's body)."""
    return ROUTES[purpose_of(request)](request)


def scripted_lm() -> FakeLM:
    """A FakeLM playing the scripted world, dispatching on each call's purpose."""
    return FakeLM(routes=ROUTES)


def make_run(
    tmp_path: Path, seed_dir: Path, *, val_tasks: int = 4, **overrides: Any
) -> tuple[RunDir, Config, Benchmark, Splits, Pool]:
    seeds = Pool.load(seed_dir, require_gate=True)
    names = ("careful-computation", "cautious-planner", "detail-verifier")
    pool = Pool(skills=tuple(seeds.get(n) for n in names), gate=seeds.gate)
    defaults: dict[str, Any] = {
        "pool.n": 3,
        "pool.k": 2,
        "training.epochs": 2,
        "optimizer.minibatch": 2,
        "training.max_steps_per_epoch": 2,
        "evolution.enabled": False,
        "evolution.embedding_model": "difflib",
        "llm.concurrency": 2,
    }
    config = load_config(None, {**defaults, **overrides})
    sp = splits(n_val=val_tasks)
    bench = get_benchmark("offline")
    run = RunDir.create(tmp_path / "run", config, pool, initial_state(config, pool, "offline", sp))
    return run, config, bench, sp, seeds


def train_run(
    run: RunDir, config: Config, bench: Benchmark, sp: Splits, seeds: Pool, lm: Any
) -> Any:
    """Train `run` (from `make_run`) to its end in process with one LM for both roles; returns
    the `Trainer` (its `state` is the final state)."""
    import asyncio

    trainer = make_trainer(
        run=RunDir.open(run.path), config=config, benchmark=bench, splits=sp,
        agent_lm=lm, optimizer_lm=lm, seeds=seeds,
    )  # fmt: skip
    asyncio.run(trainer.train())
    return trainer


# -- the same environment through the command line and the loopback server ----------------------

PROJECT_SKILLS = ("careful-computation", "cautious-planner", "detail-verifier", "gate")
ADDITION_SPEC = """\
name: addition
description: "Scripted additions for tests"
source:
  local:
    files: [addition.jsonl]
    fields: {id: id, question: question, answer: answer}
splits: {train: 8, val: 4, test: 2, seed: 1}
grader: exact
answer_instructions: "End with FINAL ANSWER: <n>"
"""


def server_responder(body: dict[str, Any]) -> str:
    """`respond` for `FakeServer` (which hands over the request body)."""
    return respond(SimpleNamespace(messages=body["messages"]))  # type: ignore[arg-type]


def write_project(root: Path, seed_dir: Path, config: str = "") -> None:
    """A project with three seed skills and the gate, and the `addition` benchmark + data."""
    for name in PROJECT_SKILLS:
        shutil.copytree(seed_dir / name, root / "skills" / name, dirs_exist_ok=True)
    (root / "moscopt.yaml").write_text(config)
    (root / "addition.yaml").write_text(ADDITION_SPEC)
    rows = [
        {"id": f"a{i}", "question": f"Compute {i} + {i}.", "answer": str(2 * i)}
        for i in range(1, 15)
    ]
    (root / "addition.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def train_argv(url: str, run: str, *extra: str, model: str = "openai/scripted") -> list[str]:
    """`moscopt train` arguments for a `write_project` project against the server at `url`: N 3,
    K 2, one epoch of one step, no evolution, into `run`; `extra` flags at the end."""
    return [
        "train", "--benchmark", "addition.yaml", "--model", model, "--api-base", url,
        "--data", "addition.jsonl", "--n", "3", "--k", "2", "--epochs", "1",
        "--steps-per-epoch", "1", "--run", run, "--no-evolution", *extra,
    ]  # fmt: skip
