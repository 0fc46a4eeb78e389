"""The agent a config describes: the built-in `SkillAgent` (tools, T, gating granularity,
progressive disclosure, execution memory and halting) or, with `agent.command`, the user's own
agent process (`moscopt.agent.external`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moscopt.agent.skill_agent import SkillAgent, agent_tools

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.extensions.memory.params import MemoryState
    from moscopt.lm.base import LM
    from moscopt.routing.gate import Router


def agent_for(
    lm: LM,
    benchmark: Benchmark,
    pool: Pool | None,
    router: Router,
    config: Config,
    *,
    memory: MemoryState | None = None,
) -> SkillAgent:
    """The agent `config` describes, with the learned execution-memory parameters `memory` of
    a run state."""
    from moscopt.agent.tools.toolbox import ToolOptions
    from moscopt.extensions.memory.tracker import MemorySettings

    if config.agent.command:
        from moscopt.agent.external.agent import ExternalAgent

        return ExternalAgent.build(lm, benchmark, pool, router, config)
    granularity = config.gating.granularity
    tools, steps = agent_tools(
        config.agent.tools, benchmark, config.agent.max_steps, granularity=granularity
    )
    return SkillAgent(
        lm,
        benchmark,
        pool,
        router,
        tools=tools,
        max_steps=steps,
        granularity=granularity,
        progressive_disclosure=config.agent.progressive_disclosure,
        memory=MemorySettings.from_config(config.memory, memory),
        embedding_model=config.memory.embedding_model or config.evolution.embedding_model,
        tool_options=ToolOptions.from_config(config.agent),
    )
