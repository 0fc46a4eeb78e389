"""Deployment exports of a run: `mixture`, `static` and `distilled` (DESIGN.md, section 3).

Every export is a folder::

    <out>/
      moscopt-export.json     the manifest (mode, K, N, models, scores, provenance)
      skills/<name>/SKILL.md  Agent Skills tree: drop these folders into an agent's skills dir
      ROUTING.md              static only: the routing table (see `moscopt.routing.table`)

- mixture: every skill and the gate (the full {S, G, K}); the agent calls the gate per task.
- static: every skill, no gate; `ROUTING.md` routes with no model call.
- distilled: one skill the optimizer model wrote by merging the top skills, with its validation
  score next to the mixture's.
- agents: every skill, no gate, for Agent Skills agents that route by description: the
  routing in each description and in a `skill-router` skill (`moscopt.exports.agent_skills`).
- router: the mixture plus `router.json`, the familiarity router's heads (`moscopt.exports.router`):
  routing with no model call.

A mixture or router export of a run that fitted its execution memory also holds `memory.json`
(the write and retrieval gates and the halting controller, `moscopt.exports.memory`), which
`moscopt eval` loads as the run state's would be.

The default folder is `<run>/exports/<mode>/`. Output is deterministic (same run, same bytes;
the distilled skill is deterministic given the cached model answer). An existing export is
replaced only with `force`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.errors import UserError
from moscopt.exports.deployment import Deployment, open_export, open_run_export
from moscopt.exports.manifest import MANIFEST_FILE, MODES, Manifest, Provenance
from moscopt.exports.reference import check_with_reference
from moscopt.exports.target import check_target, skill_paths, write_tree

if TYPE_CHECKING:
    from moscopt.app.assembly import LMs
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

__all__ = [
    "MANIFEST_FILE",
    "Deployment",
    "ExportResult",
    "export_run",
    "open_export",
    "open_run_export",
]


@dataclass
class ExportResult:
    mode: str
    out: Path
    manifest: Manifest
    files: list[str]


def export_run(
    *,
    run_path: Path,
    mode: str,
    out: Path | None = None,
    force: bool = False,
    overrides: dict[str, Any] | None = None,
    top: int | None = None,
    resolved: tuple[Benchmark, Splits] | None = None,
    lms: LMs | None = None,
    progress: Callable[[str], None] | None = None,
) -> ExportResult:
    """Export the run at `run_path`. Bad input (run, mode, target) is a `UserError` raised before
    anything is written or any model is called; `DistillationFailed` if distillation fails.

    `resolved` (the benchmark and its splits) and `lms` are for library callers (`moscopt.api`)
    whose tasks or LMs are Python objects; by default both come from the run's config.
    `progress` hears, one line at a time, what a long export (distilled) is doing."""
    from moscopt._version import __version__
    from moscopt.config import load_config
    from moscopt.run.rundir import RunDir

    if mode not in MODES:
        raise UserError(
            f"unknown mode '{mode}' (mixture, static, topq, distilled, router, agents or plugin)",
            field="mode",
        )
    run = RunDir.open(run_path)
    config = load_config(run.config_path, overrides or {})
    state = run.load_state()
    pool = run.load_pool(state)
    target = out if out is not None else run.exports_dir / mode
    check_target(target, force=force)
    k = min(config.pool.k, len(pool))
    manifest = Manifest(
        mode=mode,
        moscopt_version=__version__,
        benchmark=state.benchmark,
        k=k,
        n=len(pool),
        model=config.model,
        optimizer_model=config.effective_optimizer_model,
        validation_score=state.cursor.best_val,
        q_scores=dict(sorted(state.q.items())),
        activations=dict(sorted(state.activations.items())),
        enriched=state.epoch >= config.gating.enrich_epoch,
        skills=[],
        provenance=Provenance(
            run=run.path.resolve().name,
            step=state.step,
            epoch=state.epoch,
            status=state.status,
            checkpoint=state.checkpoint,
            pool_digest=state.pool_digest,
        ),
    )
    files: dict[str, str] = {}
    if mode in ("mixture", "router"):
        members = [*pool.skills, *([pool.gate] if pool.gate is not None else [])]
        if mode == "router":  # the mixture and the familiarity router's heads
            from moscopt.exports.router import ROUTER_FILE, router_files
            from moscopt.routing.engine import stored_router

            files[ROUTER_FILE], manifest.router = router_files(stored_router(state), pool)
        from moscopt.exports.memory import MEMORY_FILE, memory_files
        from moscopt.extensions.memory.params import stored_memory

        learned = memory_files(stored_memory(state))  # the fitted memory gates and halting, if any
        if learned is not None:
            files[MEMORY_FILE], manifest.memory = learned
    elif mode == "static":
        members = list(pool.skills)
        files["ROUTING.md"], manifest.static = _static(run, config, state, pool, k, resolved)
    elif mode == "topq":  # the paper's static deployment: the top-K skills by Q, every task
        from moscopt.exports.static import topq_routing

        members = list(pool.skills)
        files["ROUTING.md"], manifest.static = topq_routing(pool, state, k, config.credit.c_min)
    elif mode == "agents":  # the routing in the descriptions and a router skill
        from moscopt.exports.agent_skills import agents_export

        members, files["ROUTING.md"], manifest.agents = agents_export(
            run, config, state, pool, k, resolved
        )
    elif mode == "plugin":  # the agents export as a Claude Code plugin
        from moscopt.exports.plugin import plugin_export

        members, more, manifest.agents, manifest.plugin = plugin_export(
            run, config, state, pool, k, resolved
        )
        files.update(more)
    else:
        skill, manifest.distilled = _distilled(
            run, config, state, pool, k, top or k, resolved, lms, progress
        )
        members = [skill]
    manifest.skills = sorted(s.name for s in members)
    files[MANIFEST_FILE] = manifest.dumps()
    write_tree(
        target,
        files,
        force=force,
        skills=members,
        check=partial(check_with_reference, shown=target),
    )
    return ExportResult(mode, target, manifest, sorted([*files, *skill_paths(members)]))


def _static(
    run: RunDir,
    config: Config,
    state: RunState,
    pool: Pool,
    k: int,
    resolved: tuple[Benchmark, Splits] | None = None,
) -> tuple[str, dict[str, Any]]:
    from moscopt.app.benchmark import resolve_benchmark
    from moscopt.exports.static import derive_table, render_routing

    _, splits = resolved or resolve_benchmark(config, state.benchmark)
    tasks = {t.id: t for t in splits["all"]}
    derivation, summary = derive_table(run, state, pool, tasks, k, config.credit.c_min)
    digest = (state.pool_digest or "")[:12]
    provenance = f"run `{run.path.resolve().name}` (step {state.step}, pool {digest})"
    return render_routing(derivation, summary, pool, state, provenance), summary


def _distilled(
    run: RunDir,
    config: Config,
    state: RunState,
    pool: Pool,
    k: int,
    top: int,
    resolved: tuple[Benchmark, Splits] | None = None,
    given: LMs | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Any, dict[str, Any]]:
    from moscopt.agent.evaluate import run_tasks
    from moscopt.app.assembly import make_agent, open_lms
    from moscopt.app.benchmark import resolve_benchmark
    from moscopt.core.skills import Pool
    from moscopt.core.stats import few_tasks_note
    from moscopt.exports.distill import distill, top_skills
    from moscopt.routing.gate import FixedSkills

    if top < 1:
        raise UserError("--top must be at least 1", field="top")
    bench, splits = resolved or resolve_benchmark(config, state.benchmark)
    chosen = top_skills(pool, state.q, state.activations, min(top, len(pool)), config.credit.c_min)
    val = splits.val[: max(1, math.ceil(config.optimizer.p_val * len(splits.val)))]
    import contextlib

    opened = (
        open_lms(config, run, roles=("agent", "optimizer"), bench=bench) if given is None else None
    )
    with opened or contextlib.nullcontext(given) as lms:
        assert lms is not None
        assert lms.optimizer is not None
        skill, attempts = asyncio.run(
            distill(lms.optimizer, chosen, pool.gate, k, state.q, progress)
        )
        if progress is not None:
            progress(f"validating the distilled skill '{skill.name}' on {len(val)} tasks")
        single = Pool(skills=(skill,))
        agent = make_agent(config, bench, single, FixedSkills((skill.name,), "single"), lms.agent)
        # one pass over the validation split, sample 0, as training validates
        rollouts = asyncio.run(run_tasks(agent, val, concurrency=config.llm.concurrency))
    score = sum(r.reward for r in rollouts) / max(1, len(rollouts))
    return skill, {
        "skill": skill.name,
        "merged": [s.name for s in chosen],
        "attempts": attempts,
        "validation_score": score,
        "validation_tasks": len(val),
        "mixture_validation_score": state.cursor.best_val,
        "note": few_tasks_note(len(val)),
    }
