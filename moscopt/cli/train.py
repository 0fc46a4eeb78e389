"""`moscopt train`: optimize the skill pool and the gate on a benchmark (resumable)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from moscopt.cli import options as o
from moscopt.cli.app import app
from moscopt.core import choices as c


@app.command("train")
@o.shared(*o.MODEL_OPTIONS, "json_out")
@o.run_shape
def train_cmd(
    opts: o.Shared,
    shape: o.RunShape,
    run: Path | None = typer.Option(
        None, "--run", help="Run directory (default runs/<benchmark>-<time>)."
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in --run where it stopped."
    ),
    acceptance: c.Acceptance | None = typer.Option(
        None, "--acceptance", help="paired (default: a sequential paired test) or strict."
    ),
    gate: c.GatePolicy | None = typer.Option(
        None,
        "--gate",
        help="llm (default); familiarity (learned router, no LLM call) or hybrid (its shortlist, "
        "then the LLM gate); ablations of the LLM gate: random, or all (K = N).",
    ),
    gating: c.Granularity | None = typer.Option(
        None, "--gating", help="task (default), or step: the gate re-selects at every step."
    ),
    no_evolution: bool = typer.Option(
        False, "--no-evolution", help="Ablation: no collective evolution."
    ),
    no_interleave: bool = typer.Option(
        False,
        "--no-interleave",
        help="Ablation: a minibatch's skill (and gate) edits are validated together, "
        "not in turn; same number of gate edits.",
    ),
    no_rejection_buffer: bool = typer.Option(
        False,
        "--no-rejection-buffer",
        help="Ablation: proposals are not shown rejected edits (memory still learns from them).",
    ),
    reflect_edit: bool = typer.Option(
        False,
        "--reflect-edit",
        help="Ablation: EditAdam -> simple reflect-edit (no step/rejection buffer, no memory).",
    ),
    no_cobreeding: bool = typer.Option(
        False, "--no-cobreeding", help="Ablation: evolution reproduces by mutation only."
    ),
    no_progressive_disclosure: bool = typer.Option(
        False,
        "--no-progressive-disclosure",
        help="Ablation: every skill body in context; the gate still selects.",
    ),
    no_certificate: bool = typer.Option(
        False,
        "--no-certificate",
        help="Skip the certificate at the end (the final pool against the seed pool on the "
        "test split, paired per task; its cost is in moscopt plan).",
    ),
    trace: list[c.TracerName] | None = o.trace_option(),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the plan (moscopt plan) and stop: no training."
    ),
    no_pilot: bool = typer.Option(
        False, "--no-pilot", help="With --dry-run: count from the config alone, no LLM call."
    ),
) -> None:
    """Optimize the skill pool and the gate on a benchmark with MOSCOPT."""
    import json

    from moscopt.app import runner
    from moscopt.app.project import open_project
    from moscopt.lm.errors import LMFatalError

    benchmark = shape.benchmark
    shape.check_tasks()
    flags = opts.overrides(
        **{
            **shape.config_keys(),
            "optimizer.acceptance": acceptance,
            "gating.policy": gate,
            "gating.granularity": gating,
            "evolution.enabled": False if no_evolution else None,
            "training.interleave": False if no_interleave else None,
            "optimizer.rejection_buffer": False if no_rejection_buffer else None,
            "optimizer.method": "reflect_edit" if reflect_edit else None,
            "evolution.cobreed": False if no_cobreeding else None,
            "agent.progressive_disclosure": False if no_progressive_disclosure else None,
            "training.certificate_samples": 0 if no_certificate else None,
            "tracing.observers": [t.value for t in trace] if trace else None,
        },
    )
    if no_pilot and not dry_run:  # a flag that does not apply is never ignored
        from moscopt.errors import UserError

        raise UserError("--no-pilot only applies with --dry-run (it plans without a pilot)")
    if dry_run:
        from moscopt.cli.plan import show_plan

        if resume and run is None:
            from moscopt.errors import UserError

            raise UserError("--resume needs --run DIR", field="run")
        resumed = run if resume else None
        show_plan(
            opts,
            flags,
            benchmark=benchmark,
            pilot=not no_pilot,
            run=resumed,
            tasks=shape.tasks,
            held_out=shape.held_out,
        )
        return
    json_out, config = opts.json_out, opts.config
    from moscopt.cli.display import TrainDisplay
    from moscopt.cli.interrupt import prompt_interrupt

    if resume and run is None:
        from moscopt.errors import UserError

        raise UserError("--resume needs --run DIR", field="run")
    display = TrainDisplay(quiet=json_out)  # live on a terminal, plain lines elsewhere
    if run is not None:
        display.started(run)

    def interrupted() -> str:
        if display.run_path is None:
            return "moscopt: interrupted before the run was made: nothing to resume"
        return (
            "moscopt: interrupted; the run keeps everything up to its last save: "
            f"continue with moscopt train --resume --run {display.run_path}"
        )

    try:
        with prompt_interrupt(interrupted) as interrupt:
            display.begin()  # at once: loading the model can take a while
            if resume:
                assert run is not None
                outcome = runner.resume(run_path=run, overrides=flags, progress=display.update)
            else:
                project = open_project(config, flags)
                outcome = runner.train(
                    config=project.config,
                    skills_dir=project.skills_dir,
                    benchmark=benchmark,
                    run_path=run,
                    project_root=project.root,
                    progress=display.update,
                    notes=display.note,
                    started=display.started,
                    tasks=shape.tasks,
                    held_out=shape.held_out,
                )
    except LMFatalError as e:
        display.close()
        where = f" --run {display.run_path}" if display.run_path else ""
        print(
            f"moscopt: stopped: {e}\nstate saved; continue with: moscopt train --resume{where}",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        display.close()
        interrupt.announce()
        raise typer.Exit(130) from None
    finally:
        display.close()
    from moscopt.run.outcomes import outcome_counts, outcome_words

    edits = outcome_counts(outcome.run.read_events(kinds={"edit"}))  # as status counts them
    summary = {
        "run": str(outcome.run.path),
        "edits": edits,
        "skills": str(outcome.run.skills_dir),
        "val_before": outcome.before,
        "val_after": outcome.after,
        "resumed": outcome.resumed,
        "pool_changed": outcome.changed,
        "certificate": (
            outcome.certificate.model_dump(mode="json", exclude={"t", "type"})
            if outcome.certificate is not None
            else None
        ),
    }
    if json_out:
        typer.echo(json.dumps(summary, indent=2))
        return
    before, after = outcome.before, outcome.after
    typer.echo(f"run: {summary['run']}")
    if after is not None and not outcome.changed:
        # like with like: the same pool, measured once at the end under the final statistics
        typer.echo(f"validation score: {after:.3f} (pool unchanged: no edit was accepted)")
    elif before is not None and after is not None:
        typer.echo(f"validation score: {before:.3f} -> {after:.3f}")
    typer.echo(f"edits: {outcome_words(edits)}")
    if outcome.certificate is not None:
        from moscopt.optimizer.engine.certificate import line

        typer.echo(line(outcome.certificate, outcome.run))
    typer.echo(f"skills: {summary['skills']}  (moscopt status --run {summary['run']})")
