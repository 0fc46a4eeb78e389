"""`moscopt benchmarks`: the built-in benchmarks and where their data comes from."""

from __future__ import annotations

import typer

from moscopt.cli.app import app


@app.command("benchmarks")
def benchmarks_cmd(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the built-in benchmarks and where their data comes from."""
    import json

    import yaml

    from moscopt.resources import benchmark_specs_dir

    rows = []
    for path in sorted(benchmark_specs_dir().glob("*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        rows.append(
            {
                "name": spec.get("name", path.stem),
                "description": spec.get("description", ""),
            }
        )
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no benchmarks registered")
    for r in rows:
        typer.echo(f"{r['name']:<16} {r['description']}")
