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

    from moscopt.benchmarks import list_benchmarks

    rows = [b.summary() for b in list_benchmarks()]
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no benchmarks registered")
    for r in rows:
        sizes = "/".join(str(r["splits"][k]) for k in ("train", "val", "test"))
        if r["generated"]:
            source = "generated (no download)"
        else:
            hub = ", ".join(f"{h['path']}@{h['revision'][:7]}" for h in r["hub"])
            source = f"local {', '.join(r['local_files'])}; hub {hub}"
        typer.echo(f"{r['name']:<13} {r['description']}")
        typer.echo(f"{'':<13} grader {r['grader']}, splits {sizes}, {source}")
