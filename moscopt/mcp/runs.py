"""The MCP tools' calls into the application layer that take more than one line: starting a
run (with its budget required), reading where a run stands, and an evaluation's config."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.mcp.calls import Args

HOW = "pass max_calls (or max_cost) to train"


def start_training(args: Args, flags: dict[str, Any], *, resume: bool) -> dict[str, Any]:
    """Start a run (or resume the stopped `run`) in the background; its id at once."""
    from moscopt.app import background

    run = args.path("run")
    notes: list[str] = []  # the starting pool's warnings (K/N), told before the run exists
    if resume:
        if run is None:
            raise UserError("resume needs run (the run directory to continue)", field="run")
        from moscopt.app.resumption import resumed_config
        from moscopt.run.rundir import RunDir

        opened = RunDir.open(run)
        config = resumed_config(opened, opened.load_config(), flags)
        _check_budget(config)
        path = background.resume(run_path=run, overrides=flags)
    else:
        from moscopt.app.project import open_project

        shape = args.shape()
        project = open_project(args.path("config"), flags)
        _check_budget(project.config)
        path = background.start(
            config=project.config,
            skills_dir=project.skills_dir,
            benchmark=shape.benchmark,
            run_path=run,
            project_root=project.root,
            notes=notes.append,
            tasks=shape.tasks,
            held_out=shape.held_out,
        )
    return {
        "run": str(path),
        "status": "running",
        "resumed": resume,
        "notes": notes,
        "next": "status with run (wait_seconds to follow it); moscopt status --run in a terminal",
    }


def _check_budget(config: Config) -> None:
    from moscopt.app.background import require_budget
    from moscopt.lm.mcp_client import MODEL

    require_budget(config, HOW)
    uses_client = MODEL in (config.model, config.effective_optimizer_model)
    if uses_client and config.llm.max_calls is None:  # no price here: its cost stays 0
        raise UserError(
            f"the client's model ({MODEL}) has no price moscopt knows, so max_cost cannot "
            "bound it: pass max_calls",
            field="llm.max_calls",
        )


def resolve_run(args: Args) -> Path:
    """The run `args` names, else the project's latest run (a `UserError` when none)."""
    from moscopt.run.history import open_run

    return open_run(args.path("run"), args.path("config")).path


def run_status(args: Args, *, project: bool) -> dict[str, Any]:
    """`moscopt status` as data, with the run's budget, its last decision and, for a run this
    process started, the trainer's last report and an ETA (`live`)."""
    from moscopt.app.project import open_project
    from moscopt.report.summary import project_summary, run_summary

    run = args.path("run")
    if run is not None and project:
        raise UserError("run and project show different things: pass one", field="project")
    if run is None and not project:
        runs_dir = open_project(args.path("config")).runs_dir
        if runs_dir.is_dir():
            from moscopt.run.history import latest_run

            run = latest_run(runs_dir)
    if run is None:
        return project_summary(open_project(args.path("config")))
    from moscopt.app.background import tracker
    from moscopt.report.progress import run_progress
    from moscopt.run.rundir import RunDir

    opened = RunDir.open(run)
    data = {**run_summary(opened), **run_progress(opened)}
    t = tracker(opened.path)
    if t is not None:
        data["live"] = t.snapshot()
    return data


def evaluate(
    args: Args,
    flags: dict[str, Any],
    *,
    benchmark: str | None,
    split: str | None,
    mode: str | None,
    repeats: str,
) -> dict[str, Any]:
    """`moscopt eval` as data: the run's config (or the project's) and the mode it implies;
    a task file (`tasks`) instead of a benchmark is evaluated whole unless `split` says."""
    from moscopt.app import runner
    from moscopt.app.eval_choice import choose_eval

    run, skills, export = args.path("run"), args.path("skills"), args.path("export")
    choice = choose_eval(
        flags=flags, config_path=args.path("config"), run=run, skills=skills, export=export,
        benchmark=benchmark, tasks=args.path("tasks"), split=split, mode=mode,
    )  # fmt: skip
    cfg = choice.config
    outcome = runner.evaluate(
        config=cfg, benchmark=choice.benchmark, split=choice.split, mode=choice.mode,
        run_path=run, skills_dir=skills, repeats=repeats, out=None, export_path=export,
    )  # fmt: skip
    return {
        "benchmark": outcome.benchmark,
        "split": outcome.split,
        "mode": outcome.mode,
        "model": cfg.model,
        "results": str(outcome.out),
        **outcome.result.summary(),
    }
