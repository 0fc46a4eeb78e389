"""Shared pieces of the sandbox attack suites (tests/agent/tools/test_attacks*.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from moscopt.agent.tools import PythonTool
from moscopt.agent.tools.sandbox import Layers

# The modes the attack suites run in: the sandbox as it runs here, and each kernel layer on
# its own with the audit hook switched off (it is never the boundary).
ATTACK_MODES = {
    "as-available": Layers(),
    "bwrap-alone": Layers(landlock=False, seccomp=False, hook=False),
    "landlock-seccomp": Layers(bwrap=False, namespaces=False, hook=False),
}


@dataclass(frozen=True)
class Planted:
    """Secrets outside the sandbox, world-readable (so only the sandbox stands in the way)."""

    root: Path
    ssh_key: Path
    dotenv: Path
    database: Path
    key_text: str = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA"
    env_text: str = "OPENAI_API_KEY=sk-planted-dotenv-4c1f9e"
    db_text: str = "planted-sqlite-row-93be02"
    file_name: str = "authorized_keys_planted_31d"  # next to the key; only a listing shows it

    @property
    def all_texts(self) -> tuple[str, ...]:
        return (self.key_text, self.env_text, self.db_text, self.file_name)


def observe(code: str, timeout: float = 3.0) -> str:
    """What the model sees when its code is the agent's ``python`` tool call."""
    return PythonTool(timeout=timeout)(code)
