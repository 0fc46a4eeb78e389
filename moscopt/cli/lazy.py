"""The commands of `moscopt`, each imported only when it runs.

`COMMANDS` names every command with the module that defines it and its summary (the first
sentence of its help, which the list shows whole, wrapped to the terminal's width); `GROUPS`
orders them for `moscopt --help`, in the order a project uses them. `moscopt eval ...` imports
`moscopt.cli.eval` and nothing of the other commands; `moscopt --help` imports none of them
(tests/cli/test_lazy_commands.py checks that each summary is the first sentence of its
command's help).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

# name -> (module under moscopt.cli, summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "ablate": (
        "ablate",
        "Run the full method and each ablation (Tables 2 and 3) at one call budget over seeds; "
        "rerun the same command to continue a study that stopped.",
    ),
    "adopt": (
        "adopt",
        "Write a run's trained skills (default: the project's latest run) into the agent's "
        "skills folder (default: the project's skills/; e.g. --to .claude/skills), each skill "
        "folder whole, after backing up what it replaces, and print the git diff; --undo puts "
        "the backup back.",
    ),
    "benchmarks": (
        "benchmarks",
        "List the built-in benchmarks and where their data comes from.",
    ),
    "compare": (
        "compare",
        "Compare MOSCOPT with another optimizer at the same call budget over seeds (GEPA gets "
        "the calls the full method made, at most the budget); rerun to continue.",
    ),
    "harvest": (
        "harvest",
        "Mine tasks with judges from your Claude Code, Codex or generic JSONL sessions into a "
        "task file for `moscopt train --tasks` (read-only; secrets scrubbed before anything is "
        "stored).",
    ),
    "learn": (
        "learn",
        "Harvest your sessions (deterministic mining), train on the mined tasks with the "
        "held-out ones for the certificate, and stage the result in the run's skills/ for "
        "`moscopt adopt`; a budget is required.",
    ),
    "install-agent": (
        "install_agent",
        "Install moscopt into Claude Code (skill, slash commands, MCP server in .mcp.json) or "
        "Codex (skill and [mcp_servers.moscopt]); idempotent, says what it wrote.",
    ),
    "log": ("log", "History of edits with before/after scores and reasons."),
    "diff": (
        "diff",
        "Unified diff of a skill's SKILL.md between two steps (default: from the start of the "
        "run to now).",
    ),
    "eval": ("eval", "Evaluate the no-skill baseline or a skill pool on a benchmark split."),
    "export": (
        "export",
        "Export a run for deployment: mixture (skills + gate), static (a routing table, no gate "
        "call), topq (the paper's static mode: the K skills of highest Q for every task), "
        "distilled (one SKILL.md merging the top skills, validated), router (the mixture and "
        "the familiarity router's heads: no gate call), agents (for Agent Skills agents: the "
        "routing in the descriptions and a skill-router skill) or plugin (the agents export as "
        "a Claude Code plugin, with the certificate in its README).",
    ),
    "init": (
        "init",
        "Scaffold a project: moscopt.yaml, skills/ (the seed library, gate included), .gitignore.",
    ),
    "mcp": (
        "mcp",
        "Serve moscopt as a Model Context Protocol server over stdio: plan, train (in the "
        "background, with a budget), status, log, diff, eval, export and route as tools.",
    ),
    "plan": (
        "plan",
        "Expected calls, tokens, cost and time per phase of `moscopt train`, and the calls it "
        "may not exceed; from the config, the splits and one pilot minibatch (real calls, "
        "cached).",
    ),
    "report": (
        "report",
        "Write a Markdown/HTML report: settings and totals, a learning-curve plot (SVG next to "
        "the report), best validation score per epoch, evaluated modes (from `moscopt eval "
        "--run`), every edit and evolution cycle, and the final Q-scores.",
    ),
    "route": (
        "route",
        "Show the skills the gate (mixture) or the routing table (static) activates for TASK.",
    ),
    "schedule": (
        "learn",
        "Install a nightly `moscopt learn` for this project (a user crontab line, else a "
        "systemd user timer); refused without a budget; output logged under "
        ".moscopt/schedule/; `moscopt unschedule` removes exactly what it installed.",
    ),
    "status": (
        "status",
        "Show Q-scores, activations, synergy, edits and cost of a run (by default the "
        "project's latest); with --project, or before the first run, the project's seed pool "
        "and runs.",
    ),
    "stream": (
        "stream",
        "Learn on a stream of tasks: each answered once by the current pool, whose credit, "
        "niches, insight transfer and lifecycle update online (no validation split).",
    ),
    "unschedule": ("learn", "Remove the nightly job `moscopt schedule` installed here."),
    "train": ("train", "Optimize the skill pool and the gate on a benchmark with MOSCOPT."),
}


# `moscopt --help`: the commands by what they are for, each group in the order of use
GROUPS: dict[str, tuple[str, ...]] = {
    "Project": ("init", "status", "benchmarks"),
    "Train and evaluate": ("plan", "train", "eval", "stream"),
    "Inspect a run": ("log", "diff", "report"),
    "Deploy": ("export", "route", "adopt"),
    "Your coding agent": ("install-agent", "mcp", "harvest", "learn", "schedule", "unschedule"),
    "Studies": ("ablate", "compare"),
}


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands by name: every name of `COMMANDS` is listed, and a command is built
    by `load(name)` (which imports its module) the first time it is looked up."""

    def __init__(self, built: MutableMapping[str, Any], load: Callable[[str], Any]) -> None:
        self._built = dict(built)  # commands already registered when the group was made
        self._load = load

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = self._load(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._built if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS) + sum(name not in COMMANDS for name in self._built)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self._built
