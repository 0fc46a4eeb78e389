"""The external-agent harness: optimize the skills of the agent you actually run.

With `agent.command` set in moscopt.yaml, every task is solved by that command (Claude Code's
`claude -p`, `codex exec`, OpenCode, or any script) instead of moscopt's built-in agent. Per
task, moscopt routes as usual (the gate picks K skills), makes a fresh working folder, writes
the activated skills where the agent looks for them (`.claude/skills/<name>/SKILL.md` and
`.agents/skills/<name>/SKILL.md` by default, or `agent.skills_path`), runs the command there
with the task on stdin (or as an argument: `{task}`, `{task_file}`), reads the answer from its
stdout (or `agent.answer_file`), stops it after `agent.timeout` seconds, and grades the answer
with the benchmark's grader. Its bounded stdout and stderr are the trajectory reflection reads.
Credit, EditAdam, the gate, evolution and exports work unchanged on top.

    agent:
      command: claude -p --allowedTools Read
      timeout: 300

`ExternalAgent` is what `SkillAgent.from_config` returns then; nothing else changes.
"""

from __future__ import annotations

from moscopt.agent.external.command import AgentCommand
from moscopt.agent.external.workspace import DEFAULT_SKILLS_PATHS

__all__ = ["DEFAULT_SKILLS_PATHS", "AgentCommand"]
