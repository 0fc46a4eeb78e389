"""When the LLM gate's prompt dominates what a routed task costs (`moscopt plan`, `moscopt train`).

Under `gating.policy: llm` the gate reads, for every task, a table of the whole pool (one row per
skill: its name and description), so its prompt grows linearly with N while the agent's stays
the task and K skill bodies. `gate_cost_note` estimates the prompts of a routed task from their
text (characters / `CHARS_PER_TOKEN`, as the plan does without a pilot) and, once the table is
more than half of them (the gate's own text, the task twice and K bodies are the rest), says so
with the keys that bound it: `gating.policy: hybrid` offers the gate the
familiarity router's `router.shortlist` skills only; `gating.policy: familiarity` makes no
routing call. Measured figures: docs/figures.md, "Large pools, long runs, large task sets", from
`scripts/bench_scale.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.core.skills import Pool

CHARS_PER_TOKEN = 4


def gate_prompt_tokens(pool: Pool, task_chars: float, skills: Sequence[str] | None = None) -> int:
    """The gate's prompt for one task, estimated: its own body, the table of `skills` (default
    the whole pool) and the task."""
    from moscopt.core.skills import Pool
    from moscopt.routing.gate import summary_table

    chosen = pool if skills is None else Pool(skills=tuple(pool.get(n) for n in skills))
    table = summary_table(chosen)
    gate = len(pool.gate.body) if pool.gate is not None else 0
    return round((gate + len(table) + task_chars) / CHARS_PER_TOKEN)


def gate_cost_note(config: Config, pool: Pool, task_chars: float = 400.0) -> str | None:
    """A note for a pool whose table makes more than half of a routed task's prompt tokens,
    else None (other gate policies, K >= N, no gate, a pool no larger than the shortlist)."""
    k, shortlist = config.pool.k, config.router.shortlist
    if config.gating.policy != "llm" or pool.gate is None or max(k, shortlist) >= len(pool):
        return None
    bodies = sorted((len(s.body) for s in pool), reverse=True)
    agent = round((task_chars + sum(bodies[:k])) / CHARS_PER_TOKEN)
    gate = gate_prompt_tokens(pool, task_chars)
    fixed = gate_prompt_tokens(pool, task_chars, [])
    if gate - fixed <= fixed + agent:
        return None
    names = [s.name for s in pool][:shortlist]
    bounded = gate_prompt_tokens(pool, task_chars, names)
    return (
        f"the gate's prompt lists all {len(pool)} skills: about {gate:,} tokens per routed task "
        f"against about {agent:,} for the agent's call; gating.policy: hybrid bounds it to "
        f"router.shortlist = {shortlist} skills (about {bounded:,} tokens), gating.policy: "
        "familiarity makes no routing call"
    )
