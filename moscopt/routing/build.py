"""The router a config describes for a pool: the LLM gate, a fixed set, the random gate or a
static table (the learned familiarity router plugs into training as an engine extension)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.lm.base import LM
    from moscopt.routing.gate import GateStats, Router
    from moscopt.routing.table import RoutingTable


def uses_llm_gate(config: Config, pool: Pool) -> bool:
    """Whether `pool` is routed by its own, editable LLM gate (`gating.policy: llm`, or `hybrid`
    where the gate chooses within the familiarity router's shortlist; a gate; and K < N): the
    trainer's gate phase, gate edits and restoration apply only then."""
    return (
        config.gating.policy in ("llm", "hybrid")
        and pool.gate is not None
        and config.pool.k < len(pool)
    )


def make_router(
    config: Config,
    pool: Pool | None,
    lm: LM,
    *,
    stats: GateStats | None = None,
    table: RoutingTable | None = None,
) -> Router:
    """The router of a pool: a static routing `table` if given (no model call); one fixed set
    for N = K = 1 or K >= N or `gating.policy: all`; the random gate (ablation, or a pool with no
    gate); else the LLM gate seeing `stats`."""
    from moscopt.routing.gate import FixedSkills, GateStats, LLMGate, RandomGate, constrained_gate

    if pool is None:
        return FixedSkills((), "none")
    if table is not None:
        from moscopt.routing.table import StaticRouter

        return StaticRouter(table)
    k = min(config.pool.k, len(pool))
    if len(pool) == 1 and k == 1:
        return FixedSkills(pool.names[:1], "single")
    if config.gating.policy == "all" or k >= len(pool):
        return FixedSkills(pool.names, "all")
    if config.gating.policy == "random" or pool.gate is None:
        return RandomGate(pool, k, config.seed)
    stats = stats or GateStats(c_min=config.credit.c_min)
    return LLMGate(lm, pool, k, stats, constrained=constrained_gate(lm.model, config.gating.output))


def gate_stats(config: Config, state: object) -> GateStats:
    """What the gate sees of a run's statistics (Q-scores from `gating.enrich_epoch` on)."""
    from moscopt.routing.gate import GateStats

    return GateStats(
        q=dict(getattr(state, "q", {})),
        activations=dict(getattr(state, "activations", {})),
        enriched=int(getattr(state, "epoch", 0)) >= config.gating.enrich_epoch,
        c_min=config.credit.c_min,
    )
