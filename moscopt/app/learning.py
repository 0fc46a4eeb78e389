"""Learning from the user's own sessions, as library calls: `harvest` (sessions -> a task file
with judges) and `adopt` (a run's skills -> the agent's skills folder, backed up; `undo`). The
command line (`moscopt harvest`, `moscopt adopt`) and the MCP server print what these return.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moscopt.errors import UserError


def harvest_tasks(
    source: str,
    output: Path,
    *,
    project: Path | None,
    since: str | None,
    path: Path | None,
    held_out: Path | None,
    min_occurrences: int,
    config_path: Path | None,
    flags: dict[str, Any],
    use_model: bool,
) -> tuple[dict[str, Any], str]:
    """Mine the sessions of `source` into `output` (train and val) and the held-out file (test);
    (the summary, the harvest's counts in words). `use_model`: the optimizer model writes the
    judges, else the deterministic miner (nothing is sent anywhere)."""
    from moscopt.learn.harvest import harvest, parse_since
    from moscopt.learn.output import held_out_path, write_tasks

    if project is None and source != "jsonl":
        project = Path.cwd()
    scope = project.expanduser().resolve() if project is not None else None
    got = harvest(source, path=path, project=scope, since=parse_since(since))
    calls = 0
    if use_model:
        mined, calls, miner = _mine_with_model(config_path, flags, got.sessions, min_occurrences)
    else:
        from moscopt.learn.mine import mine

        mined, miner = mine(got.sessions, min_occurrences=min_occurrences), "deterministic"
    held = held_out or held_out_path(output)
    if held.expanduser().resolve() == output.expanduser().resolve():
        raise UserError("--held-out must name another file than -o", field="held-out")
    counts = write_tasks(mined.tasks, output, held)
    summary = {
        "output": str(output),
        "held_out": str(held),
        "miner": miner,
        "calls": calls,
        "sessions": got.counts.sessions,
        "files": got.counts.files,
        "skipped": dict(got.counts.skipped),
        "bad_lines": got.counts.bad_lines,
        "tasks": counts,
        "recurring_corrections": [{"said": s, "sessions": n} for s, n in mined.recurring],
        "contradictory": mined.contradictory,
    }
    return summary, got.counts.summary()


def _mine_with_model(
    config_path: Path | None, flags: dict[str, Any], sessions: list[Any], min_occurrences: int
) -> Any:
    from moscopt.app.project import open_project
    from moscopt.learn.mine_llm import mine_with_model
    from moscopt.lm import build_lm

    config = open_project(config_path, flags).config
    lm = build_lm(config, role="optimizer")
    try:
        mined, calls = mine_with_model(sessions, lm, min_occurrences=min_occurrences)
    finally:
        lm.close()
    return mined, calls, f"model:{config.effective_optimizer_model}"


def _places(to: Path | None, config: Path | None) -> tuple[Path, Path]:
    """(the agent's skills folder, the adoptions' backups) of the project."""
    from moscopt.app.project import find_config

    found = Path(config) if config is not None else find_config()
    root = found.resolve().parent if found is not None else Path.cwd()
    return (to if to is not None else root / "skills"), root / ".moscopt" / "adopt"


def adopt_run(
    run: Path | None, skills: list[str], to: Path | None, *, force: bool, config: Path | None
) -> dict[str, Any]:
    """Write the run's skills (default: the project's latest run; `skills`: only these) into
    `to` (default: the project's skills/), backing up what they replace; refused when the
    run's certificate says worse, unless `force`."""
    from moscopt.learn import adopt as a
    from moscopt.run.history import open_run

    target, backups = _places(to, config)
    rundir = open_run(run, config)
    certificates = rundir.read_events(None, {"certificate"})
    verdict = getattr(certificates[-1], "verdict", None) if certificates else None
    a.check_verdict(verdict, force)
    names = a.choose(a.run_skills(rundir.skills_dir), skills, target)
    out: dict[str, Any] = {"run": str(rundir.path), "certificate": verdict, "adopted": names}
    if names:
        result = a.adopt(rundir.skills_dir, target, names, backups, run=str(rundir.path))
        out.update(to=str(result.to), backup=str(result.backup), replaced=result.replaced,
                   added=result.added, diff=result.diff)  # fmt: skip
    return out


def undo_adoption(to: Path | None, config: Path | None) -> dict[str, Any]:
    """Put the latest adoption's backup back into the skills folder."""
    from moscopt.learn import adopt as a

    target, backups = _places(to, config)
    done = a.undo(backups, target)
    return {"to": str(done.to), "backup": str(done.backup), "restored": done.replaced,
            "removed": done.added}  # fmt: skip
