"""The MCP tools of learning from sessions: `harvest` (the user's Claude Code, Codex or JSONL
sessions -> a task file with judges) and `adopt` (a run's skills -> the agent's skills folder,
backed up; `undo`), each a call into `moscopt.app.learning`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from moscopt.mcp.calls import Args, blocking


def register(tool: Callable[..., Callable[[Any], Any]]) -> None:
    """Register the tools with the server's `tool` decorator."""

    @tool()
    async def harvest(
        ctx: Context,
        source: str,
        output: str,
        project: str | None = None,
        since: str | None = None,
        path: str | None = None,
        held_out: str | None = None,
        min_occurrences: int = 1,
        model: str | None = None,
        optimizer_model: str | None = None,
        api_base: str | None = None,
        config: str | None = None,
        max_calls: int | None = None,
        max_cost: float | None = None,
    ) -> CallToolResult:
        """Mine tasks with judges from your Claude Code, Codex or generic JSONL sessions
        (source: claude-code, codex or jsonl) into a task file for train's tasks (`moscopt
        harvest`; read-only, secrets scrubbed). Without model/optimizer_model nothing is sent
        anywhere; the held-out (test) tasks go to a file of their own."""
        args = Args.of(locals())

        def work() -> dict[str, Any]:
            from moscopt.app.learning import harvest_tasks

            summary, counts = harvest_tasks(
                source, Path(output), project=args.path("project"),
                since=since, path=args.path("path"), held_out=args.path("held_out"),
                min_occurrences=min_occurrences, config_path=args.path("config"),
                flags=args.flags(), use_model=bool(model or optimizer_model),
            )  # fmt: skip
            return {**summary, "harvest": counts}

        return await blocking(ctx, work)

    @tool()
    async def adopt(
        ctx: Context,
        run: str | None = None,
        skill: list[str] | None = None,
        to: str | None = None,
        undo: bool = False,
        force: bool = False,
        config: str | None = None,
    ) -> CallToolResult:
        """Write a run's trained skills (default: the project's latest run) into the agent's
        skills folder (default: the project's skills/; e.g. to: .claude/skills), backing up
        what they replace, with the git diff (`moscopt adopt`); a run whose certificate says
        WORSE is refused unless force; undo puts the latest backup back."""
        args = Args.of(locals())

        def work() -> dict[str, Any]:
            from moscopt.app.learning import adopt_run, undo_adoption

            if undo:
                return undo_adoption(args.path("to"), args.path("config"))
            return adopt_run(
                args.path("run"), list(skill or []), args.path("to"), force=force,
                config=args.path("config"),
            )  # fmt: skip

        return await blocking(ctx, work)
