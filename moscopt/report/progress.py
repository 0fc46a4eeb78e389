"""Where a run stands, for a caller that polls it (the MCP server's `status`): its epochs and
budget beside `run_summary`'s counters, and its last decision with the evidence behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.run.rundir import RunDir


def run_progress(run: RunDir) -> dict[str, Any]:
    """The run's epochs, its hard budget and what is left of it, and its last logged decision
    (an edit, an evolution cycle or a gate restoration, with its samples and interval)."""
    from moscopt.run.history import History

    state, config = run.load_state(), run.load_config()
    llm = config.llm
    entries = History.load(run, state).entries
    totals = state.totals
    return {
        "epochs": config.training.epochs,
        "budget": {
            "max_calls": llm.max_calls,
            "max_cost": llm.max_cost,
            "calls_left": None if llm.max_calls is None else max(0, llm.max_calls - totals.calls),
            "cost_left": None if llm.max_cost is None else max(0.0, llm.max_cost - totals.cost),
        },
        "last_decision": entries[-1].to_json() if entries else None,
    }
