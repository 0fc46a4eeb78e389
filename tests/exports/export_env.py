"""One scripted run shared by the export tests (trained once per module through the CLI).

The gate routes by topic word, so the run's gate decisions differ per task: tasks about
apples go to (cautious-planner, detail-verifier), tasks about ferries to (careful-computation,
cautious-planner), the rest to (careful-computation, detail-verifier); the gate's answer for
"Compute 5 + 5" is unusable (a fallback). Each test gets its own copy of the trained run.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, server_responder

APPLES = ("cautious-planner", "detail-verifier")
FERRIES = ("careful-computation", "cautious-planner")
PLAIN = ("careful-computation", "detail-verifier")
TOPICS = {0: " Count the apples.", 1: " Count the ferries.", 2: ""}


def question(i: int) -> str:
    return f"Compute {i} + {i}.{TOPICS[i % 3]}"


def expected_route(text: str) -> tuple[str, ...]:
    if "apples" in text:
        return APPLES
    if "ferries" in text:
        return FERRIES
    return PLAIN


@dataclass
class Responder:
    """The scripted environment plus a topic-aware gate and a distiller."""

    distill: str = "good"  # good | bad | bad-once | repeat
    distill_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if "## Available skills" in last:
            task = last.split("## Task", 1)[1].split("Reply with a single line", 1)[0]
            if "Compute 5 + 5" in task:
                return "I would pick the planner."
            return "ACTIVATE: " + ", ".join(expected_route(task))
        if "Distil them" in last:
            with self.lock:
                self.distill_calls += 1
                bad = self.distill == "bad" or (
                    self.distill == "bad-once" and self.distill_calls == 1
                )
            if bad:
                return '{"name": "x", "description": "only a fragment"'
            if self.distill == "repeat":  # what a small model writes when it has nothing to say
                body = "\n".join(["Always check the answer."] * 8)
                return json.dumps({"name": "x", "description": "d" * 10, "body": body})
            rules = "\n".join(
                f"{i}. {line}"
                for i, line in enumerate(["Read the task.", "Compute.", MAGIC, "Answer."], 1)
            )
            return json.dumps(
                {
                    "name": "Merged Arithmetic Skill",
                    "description": "Careful, checked arithmetic for every task.",
                    "body": f"# Merged arithmetic\n\n{rules}\n",
                }
            )
        return server_responder(body)


@dataclass
class Trained:
    root: Path
    server: FakeServer
    responder: Responder
    run: Path  # this test's copy of the trained run, relative to root

    def invoke(self, *args: str) -> Any:
        return CliRunner().invoke(app, list(args))


def train_args(url: str) -> list[str]:
    return [
        "train", "--benchmark", "addition.yaml", "--model", "openai/scripted", "--api-base", url,
        "--data", "addition.jsonl", "--n", "3", "--k", "2", "--epochs", "1",
        "--steps-per-epoch", "2", "--run", "runs/base", "--no-evolution",
    ]  # fmt: skip
