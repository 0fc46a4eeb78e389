"""What `moscopt status` reports, as plain data (the CLI renders it; `--json` prints it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a run's models are imported only for a run: `status` of a project is fast
    from moscopt.app.project import Project
    from moscopt.core.skills import Pool
    from moscopt.run.history import History
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

# The run state's keys (`RunState.extensions`) of the add-ons whose parts status reads: the
# familiarity router's (`routing.engine.NAME`) and the execution memory's
# (`extensions.memory.params.NAME`); a test checks that they agree. Their modules (numpy, the
# memory's models, about 0.15 s of CPU) are imported only for a run that kept such a part.
ROUTER_PART = "familiarity"
MEMORY_PART = "memory"


def _memory(state: RunState) -> list[str] | None:
    """The execution memory's lines (`extensions.memory.training.describe`), None when the run
    fitted none; imported only for a run that has one: it imports the trainer."""
    from moscopt.extensions.memory import training
    from moscopt.extensions.memory.params import stored_memory

    memory = stored_memory(state)
    return training.describe(memory) if memory is not None else None


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


def _edit_counts(history: History) -> dict[str, Any]:
    """Edit decisions as logged (`run.outcomes`): in all, and per target (skill or gate)."""
    from moscopt.run.outcomes import outcome_counts

    by_target: dict[str, dict[str, int]] = {}
    for e in history.edits:
        per = by_target.setdefault(e.target, {})
        per[e.status] = per.get(e.status, 0) + 1
    counts = outcome_counts(history.edits)
    return {**counts, "by_status": counts, "by_target": by_target}


def _decisions(history: History) -> dict[str, Any]:
    """The acceptance decisions of the run (edits, evolution, gate restorations): how many were
    accepted, the samples they used, and the mean paired difference of the accepted ones."""
    pairs = [(e, e.decision) for e in history.entries if e.decision is not None]
    decisions = [d for _, d in pairs]
    accepted = [d for e, d in pairs if _accepted(e)]
    return {
        "decisions": len(decisions),
        "policies": sorted({d.policy for d in decisions}),
        "mean_samples": sum(d.samples for d in decisions) / len(decisions) if decisions else None,
        "accepted": len(accepted),
        "mean_diff_accepted": (
            sum(d.mean_diff for d in accepted) / len(accepted) if accepted else None
        ),
    }


def _accepted(entry: Any) -> bool:
    """An edit's status, or an evolution cycle's / gate restoration's verdict."""
    status = getattr(entry, "status", None)
    return status == "accepted" if status is not None else bool(entry.accepted)


def _best_per_epoch(history: History) -> list[dict[str, Any]]:
    epochs: dict[int, list[float]] = {}
    for p in history.state.val_history:
        epochs.setdefault(p.epoch, []).append(p.score)
    return [{"epoch": e, "best": max(v), "last": v[-1]} for e, v in sorted(epochs.items())]


def run_summary(run: RunDir) -> dict[str, Any]:
    """Everything `moscopt status --run` shows.

    `edits` counts the logged edit decisions in one vocabulary (`run.outcomes`: accepted,
    rejected, unusable, not_applied), in all (also as `edits.by_status`) and per target.
    """
    from moscopt.extensions.niches.summary import niche_summary
    from moscopt.routing.gate import constrained_gate
    from moscopt.run.history import History
    from moscopt.run.ledger_read import unsaved_work

    state = run.load_state()
    config = run.load_config()
    pool = run.load_pool(state)
    history = History.load(run, state)
    synergy = sorted(state.synergy.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    best = max((p.score for p in state.val_history), default=None)
    evolution = [
        {k: v for k, v in e.to_json().items() if k not in ("changes", "kind", "t")}
        for e in history.evolutions
    ]
    return {
        "run": str(run.path),
        "benchmark": state.benchmark,
        # as a user should see it (`RunDir.condition`): a run whose process is gone is
        # `interrupted`, not `running`
        "status": run.condition(state),
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
        "edits": _edit_counts(history),
        "evolution": evolution,
        "gate_restorations": [
            {"step": e.step, "epoch": e.epoch, "accepted": e.accepted, "source": e.source}
            for e in history.restorations
        ],
        "acceptance": _decisions(history),
        "gate_constrained": constrained_gate(config.model, config.gating.output),
        # the gate's parse-failure rate over the last steps (its restoration window)
        "gate_fallback_recent": (
            sum(state.gate_failure_rates) / len(state.gate_failure_rates)
            if state.gate_failure_rates
            else None
        ),
        "niches": niche_summary(state, pool.names),
        "specialization": _specialization(run) if ROUTER_PART in state.extensions else None,
        "memory": _memory(state) if MEMORY_PART in state.extensions else None,
        "halting": _halting(run, state) if config.memory.halting.enabled else None,
        "deployments": _deployments(run, state) if config.llm.deployments else None,
        "best_val_score": best,
        "best_val_by_epoch": _best_per_epoch(history),
        "totals": state.totals.model_dump(),
        # logged after the last save (`run.ledger_read.unsaved_work`): None when nothing is
        "unsaved": unsaved_work(run.events_path, state.events_bytes),
        "checkpoints": len(run.checkpoints()),
        "certificate": _certificate(run, history),
        "export_warnings": _export_warnings(run),
    }


def _deployments(run: RunDir, state: Any) -> dict[str, dict[str, Any]]:
    """Per deployment that went down during the run (`deployment` events): how often, whether
    it is down at the end, the seconds it was down and came back, its last error."""
    out: dict[str, dict[str, Any]] = {}
    from moscopt.run.ledger import DeploymentEvent

    for e in run.read_events(state, ["deployment"]):
        if not isinstance(e, DeploymentEvent):
            continue
        d = out.setdefault(
            e.deployment, {"went_down": 0, "down": False, "down_for": 0.0, "error": None}
        )
        if e.state == "down":
            d.update(went_down=d["went_down"] + 1, down=True, since=e.t, error=e.error)
        else:
            d.update(down=False, down_for=d["down_for"] + (e.down_for or 0.0))
    return out


def _halting(run: RunDir, state: Any) -> dict[str, Any]:
    """How often halting stopped a rollout early and the calls it saved (the rollout records)."""
    from moscopt.extensions.memory.training import halting_counts
    from moscopt.run.ledger import RolloutEvent

    events = run.read_events(state, ["rollout"])
    return halting_counts(e for e in events if isinstance(e, RolloutEvent))


def _certificate(run: RunDir, history: History) -> dict[str, Any] | None:
    """The run's last certificate (final pool vs seed pool on held-out tasks) and its line."""
    from moscopt.run.ledger import CertificateEvent

    found = [e for e in history.events if isinstance(e, CertificateEvent)]
    if not found:
        return None
    from moscopt.optimizer.engine.certificate import line

    data = found[-1].model_dump(mode="json", exclude={"t", "type"})
    return {**data, "line": line(found[-1], run)}


def _export_warnings(run: RunDir) -> list[dict[str, str]]:
    """What the run's own exports (`<run>/exports/<mode>/`) warned about when they were made:
    a static or agents routing table with no rule but DEFAULT."""
    found: list[dict[str, str]] = []
    folders = sorted(run.exports_dir.iterdir()) if run.exports_dir.is_dir() else []
    if not folders:  # the exports' package (its models) is imported only when there are some
        return found
    from moscopt.errors import UserError
    from moscopt.exports.manifest import MANIFEST_FILE, load_manifest

    for folder in folders:
        if not (folder / MANIFEST_FILE).is_file():
            continue
        try:
            m = load_manifest(folder)
        except UserError:  # status shows the rest of the run
            continue
        table = m.static if m.static is not None else (m.agents or {}).get("static")
        if table and table.get("default_only"):
            found.append({"export": str(folder), "mode": m.mode, "warning": table["default_only"]})
    return found


def _specialization(run: RunDir) -> dict[str, Any]:
    """The familiarity router's specialization index, per niche and per epoch (it reads the
    benchmark's niche labels: a benchmark that cannot be loaded now leaves the index out)."""
    from moscopt.routing.specialization import run_specialization

    try:
        return run_specialization(run)
    except Exception as e:  # status must show the rest of the run
        reason = f"the benchmark's labels could not be read: {e}"[:300]
        return {"index": None, "reason": reason, "niches": {}, "by_epoch": {}}


def project_summary(project: Project) -> dict[str, Any]:
    pool = project.load_pool()
    runs = []
    if project.runs_dir.is_dir():
        from moscopt.run.rundir import RunDir

        for folder in sorted(project.runs_dir.iterdir()):
            if (folder / "state.json").is_file():
                try:
                    run = RunDir(folder)
                    state = run.load_state()
                    status = run.condition(state)
                    runs.append({"run": _rel(folder), "status": status, "step": state.step})
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
