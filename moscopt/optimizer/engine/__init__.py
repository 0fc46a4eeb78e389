"""The training engine: a small loop over phases (`trainer`), one module per phase, the shared
`Context`, validation and the `Editor` that turns EditAdam's proposals into decisions.

`Trainer` and `initial_state` load with the trainer on first use, so importing one of the
engine's small modules (`extension`, which the niches' records read for `moscopt status`) does
not import the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.optimizer.engine.trainer import Trainer, initial_state

__all__ = ["Trainer", "initial_state"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from moscopt.optimizer.engine import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
