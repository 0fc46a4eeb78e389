"""Running the examples/ folders as a user would, against the loopback server.

Each example runs in a copy of its folder (never in the repository) with `MODEL`, `API_BASE`
and a dummy key in its environment; the server answers as the scripted world does (the gate
picks careful-computation and detail-verifier, the optimizer adds the rule `MAGIC` to
careful-computation) and the agent answers a task right exactly when `MAGIC` is in its system
prompt, looking the right answer up in `answers`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, gold_of, server_responder

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@dataclass
class World:
    """The loopback server's responder; `answers` maps a question to its right answer."""

    answers: dict[str, str] = field(default_factory=dict)

    def answer(self, task: str) -> str:
        for question, gold in self.answers.items():
            if question in task:
                return gold
        return gold_of(task)

    def __call__(self, body: dict[str, Any]) -> str:
        reply = server_responder(body)
        if reply != "FINAL ANSWER: 0" and not reply.startswith("Careful.\nFINAL ANSWER"):
            return reply  # an optimizer or gate call of the scripted world
        messages = body["messages"]
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        task = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        if MAGIC in system:
            return f"Checked twice.\nFINAL ANSWER: {self.answer(task)}"
        return "FINAL ANSWER: unknown"


@dataclass
class Example:
    folder: Path  # the copy
    server: FakeServer
    world: World

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOSCOPT_")}
        env.update(
            MODEL="openai/scripted",
            API_BASE=self.server.url,
            OPENAI_API_KEY="sk-example-dummy",
            PYTHON=sys.executable,
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(self.folder.parent / "home"),
            MOSCOPT_HOME=str(self.folder.parent / "home" / ".moscopt"),
        )
        return env

    def run(
        self,
        *argv: str,
        timeout: float = 600,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` in the copy; `check`: it must succeed; `env`: overrides of `env()`."""
        result = subprocess.run(
            list(argv),
            cwd=self.folder,
            env={**self.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert result.returncode == 0, f"{argv} failed:\n{result.stdout}\n{result.stderr}"
        return result


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Callable[..., Example]]:
    servers: list[FakeServer] = []

    def make(name: str, answers: Mapping[str, str] | None = None) -> Example:
        folder = tmp_path / name
        shutil.copytree(EXAMPLES / name, folder)
        world = World(dict(answers or {}))
        server = FakeServer(responder=world).start()
        servers.append(server)
        return Example(folder, server, world)

    yield make
    for server in servers:
        server.stop()


def numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", text)
