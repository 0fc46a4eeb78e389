"""`moscopt report`: a Markdown (or HTML) report of a run with a learning-curve plot."""

from __future__ import annotations

from pathlib import Path

import typer

from moscopt.cli.app import app


@app.command("report")
def report_cmd(
    run: Path | None = typer.Option(
        None, "--run", help="A run directory (default: the project's latest run)."
    ),
    out: Path | None = typer.Option(
        None,
        "-o",
        "--out",
        help="Report file, or a directory (no suffix) for report.md/.html (default: <run>/).",
    ),
    html_out: bool = typer.Option(False, "--html", help="Write HTML instead of Markdown."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing -o file."),
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Write a Markdown/HTML report: settings and totals, a learning-curve plot (SVG next to the
    report), best validation score per epoch, evaluated modes (from `moscopt eval --run`), every
    edit and evolution cycle, and the final Q-scores."""
    from moscopt.report.page import write_report
    from moscopt.run.history import open_run

    result = write_report(open_run(run), out, html_out=html_out, force=force)
    if json_out:
        import json

        data = {"report": str(result.path), "plot": str(result.plot), "notes": result.notes}
        typer.echo(json.dumps(data, indent=2))
        return
    for note in result.notes:
        typer.echo(f"moscopt: {note}", err=True)
    typer.echo(f"report: {result.path}")
    typer.echo(f"plot: {result.plot}")
