"""The training engine: a small loop over phases (`trainer`), one module per phase, the shared
`Context`, validation and the `Editor` that turns EditAdam's proposals into decisions."""

from moscopt.optimizer.engine.trainer import Trainer, initial_state

__all__ = ["Trainer", "initial_state"]
