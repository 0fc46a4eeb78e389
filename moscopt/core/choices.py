"""The values of the enumerated settings and flags, each list written once, as `Literal` types.

The config's fields and the command line's options are typed with them: typer lists a
Literal's values in `--help` (`<paired|strict>`), refuses any other (exit 2) and offers them to
shell completion. Standard library only: the command modules import it when they load.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

Acceptance = Literal["strict", "paired"]
GatePolicy = Literal["llm", "random", "all", "familiarity", "hybrid"]
Granularity = Literal["task", "step"]
ExportMode = Literal["mixture", "static", "topq", "distilled", "router", "agents", "plugin"]
EvalMode = Literal["none", "mixture", "static", "topq", "distilled", "router", "agents"]
RouteMode = Literal["mixture", "static", "router", "agents"]
Split = Literal["train", "val", "test", "all"]
CompareWith = Literal["gepa", "skillopt-mode", "none"]
StreamOrder = Literal["given", "shuffled"]
Tracer = Literal["otel", "mlflow", "wandb"]


class TracerName(StrEnum):
    """`Tracer` for a repeatable option (typer takes no list of a Literal): the same values."""

    otel = "otel"
    mlflow = "mlflow"
    wandb = "wandb"
