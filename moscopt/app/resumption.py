"""What a resumed run may change: the operational flags (`RESUMABLE`); anything else must match
its frozen config, or the resumed run would silently become a different experiment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from moscopt.config import Config
from moscopt.errors import UserError

if TYPE_CHECKING:
    from moscopt.run.rundir import RunDir

RESUMABLE = (
    "llm.concurrency",
    "llm.max_calls",
    "llm.max_cost",
    "llm.timeout",
    "llm.max_retries",
    "llm.max_error_rate",
    "training.certificate_samples",  # the end-of-run certificate takes no decision
    "tracing.observers",  # what watches the run changes none of its decisions
)


def resumed_config(run: RunDir, frozen: Config, overrides: dict[str, Any]) -> Config:
    """The run's `frozen` config with the flags a resumed run may change (`RESUMABLE`); a
    `UserError` naming the others."""
    changed = {k: v for k, v in overrides.items() if v is not None}
    if "data.path" in changed:  # the frozen config holds the resolved path
        changed["data.path"] = str(Path(changed["data.path"]).resolve())
    fixed = [k for k in changed if k not in RESUMABLE and _get(frozen, k) != changed[k]]
    if fixed:
        raise UserError(
            "a resumed run keeps its frozen config; these flags would change it: "
            + ", ".join(fixed),
            path=run.config_path,
        )
    from moscopt.config import load_config

    return load_config(run.config_path, changed) if changed else frozen


def _get(config: Config, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = getattr(node, part)
    return node
