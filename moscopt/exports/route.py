"""`moscopt route`: which skills a deployment activates for one task, and why."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from moscopt.errors import UserError
from moscopt.exports.deployment import open_export, open_run_export


def route_task(
    text: str,
    *,
    run_path: Path | None,
    export_path: Path | None,
    mode: str | None,
    overrides: dict[str, Any],
    config_path: Path | None = None,
) -> dict[str, Any]:
    """The routing of `text` as plain data: skills, source, fallback reason or the rule."""
    from moscopt.run.history import open_run

    if not text.strip():
        raise UserError("the task text is empty", field="TASK")
    # --run DIR, else --export PATH alone, else the project's latest run
    run = (
        open_run(run_path, config_path, finished=True)
        if export_path is None or run_path is not None
        else None
    )
    deployment = open_export(export_path, mode) if export_path is not None else None
    chosen = mode or (deployment.mode if deployment is not None else "mixture")
    if chosen not in ("mixture", "static", "router", "agents"):
        raise UserError(
            f"--mode must be mixture, static, router or agents, not '{chosen}'", field="mode"
        )
    if chosen == "router":  # the familiarity router's export: no LLM call
        from moscopt.exports.router import route_with_router

        if deployment is None:
            assert run is not None
            deployment = open_run_export(run, "router")
        return route_with_router(text, deployment.folder)
    if chosen in ("static", "agents"):  # agents: the table its router skill spells out
        if deployment is None:
            assert run is not None
            deployment = open_run_export(run, chosen)
        assert deployment.table is not None
        match = deployment.table.match(text)
        return {
            "mode": chosen,
            "skills": list(match.skills),
            "source": "static",
            "rule": match.index,
            "rule_text": match.describe(),
            "export": str(deployment.folder),
        }
    return _route_mixture(text, run, deployment, overrides, config_path)


def _route_mixture(
    text: str, run: Any, deployment: Any, overrides: dict[str, Any], config_path: Path | None
) -> dict[str, Any]:
    from moscopt.app.assembly import open_lms
    from moscopt.config import load_config
    from moscopt.routing.build import gate_stats, make_router

    stats = None
    if run is not None:
        config = load_config(run.config_path, overrides)
        state = run.load_state()
        pool = deployment.pool if deployment is not None else run.load_pool(state)
        stats = gate_stats(config, state)
    else:
        from moscopt.app.project import open_project

        config = open_project(config_path, overrides).config
        pool = deployment.pool
        stats = deployment.gate_stats(config.credit.c_min)
        config = config.model_copy(
            update={"pool": config.pool.model_copy(update={"k": deployment.manifest.k})}
        )
    with open_lms(config, run, roles=("agent",)) as lms:
        router = make_router(config, pool, lms.agent, stats=stats)
        activation = asyncio.run(router.select(text))
    usage = activation.usage
    return {
        "mode": "mixture",
        "skills": list(activation.skills),
        "source": activation.source,
        "fallback": activation.source == "fallback",
        "error": activation.error,
        "model": config.model if usage is not None else None,
        "cache_hit": bool(getattr(usage, "cache_hit", False)) if usage is not None else None,
    }
