"""Opening an export for `eval` and `route`: its pool, its routing table, its manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.exports.manifest import MANIFEST_FILE, SKILLS_DIR, Manifest, load_manifest
from moscopt.exports.static import ROUTING_FILE
from moscopt.routing.table import RoutingTable

if TYPE_CHECKING:
    from moscopt.exports.router import RouterExport
    from moscopt.extensions.memory.params import MemoryState
    from moscopt.routing.gate import GateStats
    from moscopt.run.rundir import RunDir


@dataclass(frozen=True)
class Deployment:
    """A loaded export. `table` is set for static exports only, `router` for router ones,
    `memory` for mixture and router exports of a run that fitted its execution memory."""

    folder: Path
    manifest: Manifest
    pool: Pool
    table: RoutingTable | None
    router: RouterExport | None = None
    memory: MemoryState | None = None  # the learned execution memory (memory.json), if any

    @property
    def mode(self) -> str:
        """How it is deployed: a plugin export is deployed as the agents export it holds."""
        return "agents" if self.manifest.mode == "plugin" else self.manifest.mode

    def gate_stats(self, c_min: int) -> GateStats:
        """What the trained gate saw besides descriptions (for a mixture export)."""
        from moscopt.routing.gate import GateStats

        m = self.manifest
        return GateStats(m.q_scores, m.activations, enriched=m.enriched, c_min=c_min)


def open_export(folder: Path, mode: str | None = None) -> Deployment:
    """Load the export in `folder`; with `mode`, it must be an export of that mode."""
    manifest = load_manifest(folder)
    if mode is not None and mode not in (manifest.mode, _deployed(manifest.mode)):
        raise UserError(
            f"is a {manifest.mode} export, not a {mode} one", path=folder / MANIFEST_FILE
        )
    pool = Pool.load(folder / SKILLS_DIR)
    table = None
    if _deployed(manifest.mode) in ("static", "topq", "agents"):  # agents: the table, for route
        path = folder / ROUTING_FILE
        table = RoutingTable.load(path)
        table.check_skills(pool.names, path)
    if manifest.mode == "distilled" and len(pool) != 1:
        raise UserError(
            f"a distilled export holds exactly one skill, found {len(pool)}",
            path=folder / SKILLS_DIR,
        )
    router = None
    if manifest.mode == "router":
        from moscopt.exports.router import load_router

        router = load_router(folder)
    memory = None
    if manifest.mode in ("mixture", "router"):
        from moscopt.exports.memory import load_memory

        memory = load_memory(folder)
    return Deployment(folder, manifest, pool, table, router, memory)


def _deployed(mode: str) -> str:
    return "agents" if mode == "plugin" else mode


def open_run_export(run: RunDir, mode: str) -> Deployment:
    """The run's own `exports/<mode>/`; a clear error naming the command if it is missing."""
    folder = run.exports_dir / mode
    if not (folder / MANIFEST_FILE).is_file():
        raise UserError(
            f"this run has no {mode} export yet: create it with "
            f"`moscopt export --mode {mode} --run {run.path}`",
            path=folder,
        )
    return open_export(folder, mode)
