"""The MCP server: its tools, each a thin call into the application layer.

A tool's arguments are the command line's options in snake case (`benchmark`, `data`, `model`,
`api_base`, `max_calls`, `max_cost`, `n`, `k`, `epochs`, `limit`, `run`, `set`, ...), checked
by the same code (`moscopt.cli.options.Shared.overrides`, `Config`), so a bad one gets the
command line's one-line message as a tool error (`moscopt.mcp.calls`), never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult

from moscopt.mcp.calls import Args, blocking, tool_result, watch

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = (
    "moscopt optimizes an agent's pool of Markdown skills (Agent Skills folders) and the gating "
    "skill that picks K of them per task, on a benchmark with a grader. Plan before you spend "
    "(plan), then train with a budget (max_calls or max_cost): train returns the run's id at "
    "once; follow it with status (wait_seconds streams progress), read each decision's evidence "
    "with log and diff, and the certificate (final vs starting pool on held-out tasks) in "
    "status; export the pool (mode agents or plugin for Claude Code) when it is better."
)

server: MCPServer = MCPServer("moscopt", instructions=INSTRUCTIONS, log_level="WARNING")


def tool(name: str | None = None) -> Callable[[F], F]:
    """Register a tool; its description is its docstring on one line."""

    def register(fn: F) -> F:
        text = " ".join((fn.__doc__ or "").split())
        return server.tool(name=name, description=text, structured_output=False)(fn)

    return register


@tool()
async def plan(
    ctx: Context,
    benchmark: str | None = None,
    data: str | None = None,
    model: str | None = None,
    optimizer_model: str | None = None,
    api_base: str | None = None,
    config: str | None = None,
    seed: int | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    limit: int | None = None,
    max_tokens: int | None = None,
    n: int | None = None,
    k: int | None = None,
    epochs: int | None = None,
    steps_per_epoch: int | None = None,
    acceptance: str | None = None,
    no_evolution: bool = False,
    no_pilot: bool = False,
    latency: float | None = None,
    set: list[str] | None = None,
    run: str | None = None,
) -> CallToolResult:
    """Expected calls, tokens, cost and time per phase of a training run, and the calls it may
    not exceed (`moscopt plan`); with run, what resuming that run may cost. The pilot makes
    real calls through the response cache (no_pilot: none)."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.app.plans import plan_run

        flags = args.flags(
            **{
                "optimizer.acceptance": acceptance,
                "evolution.enabled": False if no_evolution else None,
            }
        )
        result, notes = plan_run(
            args.path("config"), flags, benchmark=benchmark, pilot=not no_pilot,
            latency=latency, run=args.path("run"),
        )  # fmt: skip
        return {**result.to_json(), "notes": notes}

    return await blocking(ctx, work)


@tool()
async def train(
    ctx: Context,
    benchmark: str | None = None,
    data: str | None = None,
    model: str | None = None,
    optimizer_model: str | None = None,
    api_base: str | None = None,
    config: str | None = None,
    seed: int | None = None,
    concurrency: int | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    limit: int | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    no_cache: bool = False,
    n: int | None = None,
    k: int | None = None,
    epochs: int | None = None,
    steps_per_epoch: int | None = None,
    acceptance: str | None = None,
    gate: str | None = None,
    no_evolution: bool = False,
    no_certificate: bool = False,
    set: list[str] | None = None,
    run: str | None = None,
    resume: bool = False,
    wait: bool = False,
) -> CallToolResult:
    """Start a training run in the background and return its id (run directory) at once
    (`moscopt train`); it needs a budget: max_calls or max_cost, here or in moscopt.yaml.
    resume continues the stopped run given as run. Follow it with status (wait_seconds);
    wait=true instead waits for its end, reporting progress. model 'mcp/client' asks this MCP
    client's own model through sampling (where the client supports it)."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.mcp.runs import start_training

        flags = args.flags(
            **{
                "optimizer.acceptance": acceptance,
                "gating.policy": gate,
                "evolution.enabled": False if no_evolution else None,
                "training.certificate_samples": 0 if no_certificate else None,
            }
        )
        return start_training(args, flags, resume=resume)

    started = await blocking(ctx, work, result=False)
    if not isinstance(started, dict):
        return started
    if wait:
        return await watch(ctx, Path(started["run"]), None)
    return tool_result(started)


@tool()
async def status(
    ctx: Context,
    run: str | None = None,
    project: bool = False,
    config: str | None = None,
    wait_seconds: float = 0.0,
) -> CallToolResult:
    """Where a run stands (`moscopt status`; default: the project's latest run): status, epoch,
    step, phase, calls, tokens, cost, budget left, ETA while it runs here, the last decision with
    its evidence, Q-scores, edits and the certificate. wait_seconds: wait up to that long for the
    run to end, reporting progress. project: the project's seed pool and runs instead."""
    args = Args.of(locals())
    if wait_seconds > 0 and not project:
        from moscopt.mcp.runs import resolve_run

        path = await blocking(ctx, lambda: resolve_run(args), result=False)
        if not isinstance(path, Path):
            return path
        return await watch(ctx, path, wait_seconds)

    def work() -> dict[str, Any]:
        from moscopt.mcp.runs import run_status

        return run_status(args, project=project)

    return await blocking(ctx, work)


@tool()
async def log(ctx: Context, run: str | None = None, skill: str | None = None) -> CallToolResult:
    """Every edit, evolution cycle and gate restoration of a run (`moscopt log`), with its score
    before and after, its reason and its decision's evidence; skill: only those about it."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.run.history import History, open_run

        history = History.load(open_run(args.path("run")))
        entries = history.entries_about(skill)
        return {"entries": [e.to_json() for e in entries], "warnings": history.warnings}

    return await blocking(ctx, work)


@tool()
async def diff(
    ctx: Context,
    skill: str,
    from_step: int | None = None,
    to_step: int | None = None,
    run: str | None = None,
) -> CallToolResult:
    """The unified diff of a skill's SKILL.md (or 'gate') between two steps of a run (`moscopt
    diff`; default: from the start of the run to now)."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.run.history import History, diff_json, open_run

        return diff_json(History.load(open_run(args.path("run"))), skill, from_step, to_step)

    return await blocking(ctx, work)


@tool("eval")
async def eval_(
    ctx: Context,
    benchmark: str | None = None,
    split: str = "test",
    mode: str | None = None,
    run: str | None = None,
    skills: str | None = None,
    export: str | None = None,
    repeats: str = "1",
    data: str | None = None,
    model: str | None = None,
    api_base: str | None = None,
    config: str | None = None,
    seed: int | None = None,
    concurrency: int | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    limit: int | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    no_cache: bool = False,
    set: list[str] | None = None,
) -> CallToolResult:
    """Score the no-skill baseline, a run's pool, a skills folder or an export on a benchmark
    split (`moscopt eval`): score, 95% interval, calls, cost, the per-task results file."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.mcp.runs import evaluate

        return evaluate(args, args.flags(), benchmark=benchmark, split=split, mode=mode,
                        repeats=repeats)  # fmt: skip

    return await blocking(ctx, work)


@tool()
async def export(
    ctx: Context,
    mode: str,
    run: str | None = None,
    out: str | None = None,
    force: bool = False,
    top: int | None = None,
    model: str | None = None,
    optimizer_model: str | None = None,
    api_base: str | None = None,
    data: str | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    no_cache: bool = False,
    set: list[str] | None = None,
) -> CallToolResult:
    """Export a finished run for deployment (`moscopt export`): mixture, static, topq,
    distilled, router, agents (for Agent Skills agents) or plugin (a Claude Code plugin with
    the certificate in its README). Default run: the project's latest finished run."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.exports import export_run
        from moscopt.run.history import open_run

        result = export_run(
            run_path=open_run(args.path("run"), finished=True).path,
            mode=mode,
            out=args.path("out"),
            force=force,
            overrides=args.flags(),
            top=top,
        )
        return {
            "out": str(result.out),
            "files": result.files,
            **result.manifest.model_dump(mode="json"),
        }

    return await blocking(ctx, work)


@tool()
async def route(
    ctx: Context,
    task: str,
    run: str | None = None,
    export: str | None = None,
    mode: str | None = None,
    model: str | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    config: str | None = None,
    no_cache: bool = False,
    set: list[str] | None = None,
) -> CallToolResult:
    """Which skills a trained pool activates for a task, and why (`moscopt route`): mixture (one
    gate call), static (the routing table) or router (the familiarity router, no LLM call)."""
    args = Args.of(locals())

    def work() -> dict[str, Any]:
        from moscopt.exports.route import route_task

        return route_task(
            task,
            run_path=args.path("run"),
            export_path=args.path("export"),
            mode=mode,
            overrides=args.flags(),
            config_path=args.path("config"),
        )

    return await blocking(ctx, work)


def run_stdio() -> None:
    """Serve on stdin/stdout until the client closes them."""
    server.run("stdio")
