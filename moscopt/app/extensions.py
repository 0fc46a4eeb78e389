"""The add-ons a config plugs into the engine, in the order the engine calls them: the learned
router (`gating.policy` familiarity or hybrid), niches and insight transfer, gated execution
memory. The engine imports none of them; this is the one place that chooses them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.optimizer.engine.extension import Extension


def extensions_for(config: Config, *, stream: bool = False) -> list[Extension]:
    """The extensions `config` asks for (`stream`: a stream run, whose transfer sees rewards,
    not answers)."""
    from moscopt.extensions.memory import training as memory
    from moscopt.extensions.niches import extension as niches

    found: list[Extension] = []
    if config.gating.policy in ("familiarity", "hybrid"):
        from moscopt.routing.engine import FamiliarityExtension

        found.append(FamiliarityExtension())
    if niches.wanted(config):
        found.append(niches.NichesExtension(config, show_gold=not stream))
    if memory.wanted(config) and not stream:  # a stream does not fit the execution memory
        found.append(memory.MemoryExtension())
    return found
