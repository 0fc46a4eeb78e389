"""The agent's `shell` tool (in progress)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShellTool:
    max_output: int = 4000
    allow_unsandboxed: bool = False

    def __call__(self, script: str) -> str:
        raise NotImplementedError
