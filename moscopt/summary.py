"""What `moscopt status` reports, as plain data (the CLI renders it; `--json` prints it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from moscopt.project import Project
from moscopt.rundir import RunDir
from moscopt.skills import Pool


def _skill_rows(pool: Pool, q: dict[str, float], act: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "name": s.name,
            "description": s.description,
            "q": q.get(s.name),
            "activations": act.get(s.name, 0),
            "lines": s.body.count("\n"),
        }
        for s in pool
    ]


def run_summary(run: RunDir) -> dict[str, Any]:
    state = run.load_state()
    config = run.load_config()
    pool = run.load_pool(state)
    synergy = sorted(state.synergy.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    best = max((p.score for p in state.val_history), default=None)
    return {
        "run": str(run.path),
        "benchmark": state.benchmark,
        "status": state.status,
        "created_at": state.created_at,
        "epoch": state.epoch,
        "step": state.step,
        "phase": state.phase,
        "model": config.model,
        "optimizer_model": config.effective_optimizer_model,
        "n": config.pool.n,
        "k": config.pool.k,
        "gate": pool.gate is not None,
        "skills": _skill_rows(pool, state.q, state.activations),
        "synergy_top": [{"pair": k.split("|"), "count": v} for k, v in synergy],
        "edits": {"accepted": state.accepted_edits(), "rejected": state.rejected_edits()},
        "best_val_score": best,
        "totals": state.totals.model_dump(),
        "checkpoints": len(run.checkpoints()),
    }


def project_summary(project: Project) -> dict[str, Any]:
    pool = project.load_pool()
    runs = []
    if project.runs_dir.is_dir():
        for folder in sorted(project.runs_dir.iterdir()):
            if (folder / "state.json").is_file():
                try:
                    state = RunDir(folder).load_state()
                    runs.append({"run": _rel(folder), "status": state.status, "step": state.step})
                except Exception as e:  # a broken run must not hide the others
                    runs.append({"run": _rel(folder), "status": f"unreadable: {e}", "step": None})
    return {
        "config": str(project.config_path) if project.config_path else None,
        "model": project.config.model,
        "optimizer_model": project.config.effective_optimizer_model,
        "n": project.config.pool.n,
        "k": project.config.pool.k,
        "skills_dir": str(project.skills_dir),
        "gate": pool.gate is not None,
        "skills": _skill_rows(pool, {}, {}),
        "runs": runs,
    }


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
