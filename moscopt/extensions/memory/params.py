"""What the run state keeps of the memory gates and the halting controller: their fitted
parameters with calibration, and the bounded buffers of examples they are refitted from.

JSON only: the memory extension's part of the run state (`RunState.extensions["memory"]`,
read by `stored_memory`); a model whose feature names differ from the current code's is ignored
(the untrained rule applies) until it is refitted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from moscopt.extensions.memory.learned import Calibration, Logistic

if TYPE_CHECKING:
    from moscopt.run.migrations import Migration
    from moscopt.run.state import RunState

NAME = "memory"  # its key in the run state's `extensions`
# MIGRATIONS[i] upgrades the part's version i + 1 to i + 2. Append only.
MIGRATIONS: list[Migration] = []


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelParams(_Record):
    """One fitted `Logistic` and how well it fits its examples."""

    features: list[str]
    weights: list[float]
    bias: float
    examples: int = 0
    base_rate: float = 0.0
    brier: float = 0.0
    ece: float = 0.0
    accuracy: float = 0.0

    @classmethod
    def of(cls, features: tuple[str, ...], model: Logistic, cal: Calibration) -> ModelParams:
        return cls(
            features=list(features),
            weights=list(model.weights),
            bias=model.bias,
            examples=cal.examples,
            base_rate=cal.base_rate,
            brier=cal.brier,
            ece=cal.ece,
            accuracy=cal.accuracy,
        )

    def model(self, features: tuple[str, ...]) -> Logistic | None:
        """The model, if it was fitted on `features` (else None: the untrained rule)."""
        if tuple(self.features) != features or len(self.weights) != len(features):
            return None
        return Logistic(tuple(self.weights), self.bias)


class MemoryState(_Record):
    """Learned parameters of the execution memory and halting (`None`: not fitted yet)."""

    write: ModelParams | None = None
    retrieval: ModelParams | None = None
    halting: ModelParams | None = None
    # Each example is its features followed by its label, oldest first (bounded FIFO).
    write_examples: list[list[float]] = Field(default_factory=list)
    retrieval_examples: list[list[float]] = Field(default_factory=list)
    halting_examples: list[list[float]] = Field(default_factory=list)
    rollouts: int = 0  # rollouts learned from


def stored_memory(state: RunState) -> MemoryState | None:
    """The learned memory gates and halting a run state keeps (None: not fitted)."""
    data = state.part(NAME, MIGRATIONS)
    return None if data is None else MemoryState.model_validate(data)
