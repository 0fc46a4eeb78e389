"""The router export: the familiarity router's heads beside the mixture, for routing with no
LLM call (`moscopt export --mode router`).

The folder is a mixture export (every skill and the gate, `moscopt-export.json`) plus
`router.json`, plain JSON (no pickle)::

    format            1
    embedding_model   the sentence-transformers model (or "hashing-<dim>") the heads read
    embedding_dim     its dimension
    boilerplate       text removed from a task before it is embedded (the training benchmark's
                      answer instructions; optional, default none)
    skills            the skills the heads route to, in head order (all in skills/)
    hyper             k_min, k_max, theta, tau, margin, feature_dim, reference_dim, ...
    heads             seed, names, the projection (center, basis), the predictor heads
                      (weight) and the frozen target heads (target): arrays as
                      {dtype, shape, base64 of the little-endian bytes}
    allocated, routed training rollouts per skill, and in all

Routing reads the task's embedding (the model is loaded once, offline for MiniLM), projects it,
and activates the smallest set of best-ranked skills whose familiarity sums to theta (no
exploration bonus at deployment).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.core import jsonio
from moscopt.errors import UserError
from moscopt.run.fsio import pretty_json, read_text

if TYPE_CHECKING:
    from moscopt.core.skills import Pool
    from moscopt.routing.familiarity import FamiliarityModel, Routing
    from moscopt.routing.router import FamiliarityRouter

ROUTER_FILE = "router.json"
FORMAT = 1


@dataclass
class RouterExport:
    """A loaded `router.json`: the heads and the name of the embedding model they read."""

    model: FamiliarityModel
    embedding_model: str
    path: Path
    boilerplate: tuple[str, ...] = ()

    def router(self, pool: Pool | None = None) -> FamiliarityRouter:
        """A deployment router (no exploration) over `pool`'s skills, else the heads' own."""
        from moscopt.embedding import make_embedder
        from moscopt.routing.features import FeatureCache
        from moscopt.routing.router import FamiliarityRouter

        names = pool.names if pool is not None else tuple(self.model.names)
        cache = FeatureCache(make_embedder(self.embedding_model), self.boilerplate)
        return FamiliarityRouter(self.model, cache, names)


def router_document(router_state: dict[str, Any]) -> dict[str, Any]:
    """`router.json` from a run's familiarity part (`moscopt.routing.engine.stored_router`)."""
    from moscopt.routing.familiarity import FamiliarityModel

    model = FamiliarityModel.from_json(router_state["model"])
    return {
        "format": FORMAT,
        "embedding_model": router_state["embedding_model"],
        "embedding_dim": model.dim,
        "boilerplate": list(router_state.get("boilerplate", [])),
        "skills": list(model.names),
        "hyper": model.hyper.to_json(),
        "heads": model.heads_json(),
        "allocated": dict(sorted(model.allocated.items())),
        "routed": model.routed,
    }


def router_files(router_state: dict[str, Any] | None, pool: Pool) -> tuple[str, dict[str, Any]]:
    """(the text of `router.json`, the manifest's summary of it) for a run whose pool is
    `pool`; a `UserError` when the run has no trained router or routes other skills."""
    if not router_state:
        raise UserError(
            "this run has no familiarity router: train it with --gate familiarity (or hybrid)",
            field="mode",
        )
    doc = router_document(router_state)
    missing = sorted(set(pool.names) - set(doc["skills"]))
    if missing:
        raise UserError(
            f"the router has no heads for {', '.join(missing)} (the pool changed after its last "
            "training step): resume training, then export",
            field="mode",
        )
    text = pretty_json(doc)
    h = doc["hyper"]
    summary = {
        "file": ROUTER_FILE,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "embedding_model": doc["embedding_model"],
        "skills": len(doc["skills"]),
        "k_min": h["k_min"],
        "k_max": h["k_max"],
        "theta": h["theta"],
        "feature_dim": doc["heads"]["projection"]["basis"]["shape"][0],
        "routed": doc["routed"],
    }
    return text, summary


def load_router(folder: Path) -> RouterExport:
    """The `router.json` of the export in `folder`; a missing or bad file is a `UserError`."""
    from moscopt.routing.arrays import ArrayFormatError
    from moscopt.routing.familiarity import FamiliarityModel

    path = folder / ROUTER_FILE
    if not path.is_file():
        raise UserError(f"not a router export (no {ROUTER_FILE})", path=folder)
    try:
        data = jsonio.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg}", path=path, line=e.lineno) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else None
        raise UserError(f"format {got!r} is not one this moscopt reads ({FORMAT})", path=path)
    try:
        model = FamiliarityModel.from_json(data["heads"])
        name = str(data["embedding_model"])
        boilerplate = data.get("boilerplate", [])
        if not isinstance(boilerplate, list) or not all(isinstance(b, str) for b in boilerplate):
            raise TypeError("'boilerplate' must be a list of strings")
    except (KeyError, TypeError, ValueError, ArrayFormatError) as e:
        raise UserError(f"not a valid router: {e}"[:300], path=path) from None
    return RouterExport(model, name, path, tuple(boilerplate))


def explain(routing: Routing) -> dict[str, Any]:
    """A routing decision as plain data (what `moscopt route --mode router` prints)."""
    return {
        "mode": "router",
        "skills": list(routing.skills),
        "source": "familiarity",
        "familiarity": {k: round(v, 4) for k, v in routing.familiarity.items()},
        "ranked": list(routing.ranked),
        "cumulative": round(routing.cumulative, 4),
        "reached": routing.reached,
    }


def route_with_router(text: str, folder: Path) -> dict[str, Any]:
    """The routing of `text` by the router export in `folder` (no LLM call)."""
    import asyncio

    from moscopt.core.skills import Pool
    from moscopt.exports.manifest import SKILLS_DIR

    if not text.strip():
        raise UserError("the task text is empty", field="TASK")
    exported = load_router(folder)
    router = exported.router(Pool.load(folder / SKILLS_DIR))
    result = explain(asyncio.run(router.explain(text)))
    h = exported.model.hyper
    return {**result, "theta": h.theta, "k_min": h.k_min, "k_max": h.k_max, "export": str(folder)}
