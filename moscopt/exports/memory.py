"""The learned execution memory beside a mixture (or router) export: `memory.json`.

What `moscopt eval` needs to run the agent as training left it: the fitted write gate,
retrieval gate and halting controller of the run state (`RunState.memory`: each a logistic
model over named features, with its calibration), as plain JSON. The example buffers they
were fitted from stay in the run (an export ships parameters, not training data). Written
only when the run fitted something; a model whose feature names differ from the code's is
ignored when loaded (the untrained rule applies), as in the run state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moscopt.core import jsonio
from moscopt.core.validation import user_error
from moscopt.errors import UserError
from moscopt.extensions.memory.params import MemoryState
from moscopt.run.fsio import pretty_json, read_text

MEMORY_FILE = "memory.json"
FORMAT = 1
MODELS = ("write", "retrieval", "halting")


def memory_files(state: MemoryState | None) -> tuple[str, dict[str, Any]] | None:
    """(`memory.json`'s text, the manifest's summary of it), or None with nothing fitted."""
    if state is None or all(getattr(state, name) is None for name in MODELS):
        return None
    fitted = MemoryState(
        write=state.write,
        retrieval=state.retrieval,
        halting=state.halting,
        rollouts=state.rollouts,
    )
    document = {"format": FORMAT, **fitted.model_dump(mode="json", include={*MODELS, "rollouts"})}
    summary = {
        "file": MEMORY_FILE,
        "rollouts": state.rollouts,
        "fitted": [name for name in MODELS if getattr(state, name) is not None],
    }
    return pretty_json(document), summary


def load_memory(folder: Path) -> MemoryState | None:
    """The learned memory of the export in `folder` (None when it has no `memory.json`)."""
    path = folder / MEMORY_FILE
    if not path.is_file():
        return None
    try:
        data = jsonio.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg}", path=path, line=e.lineno) from None
    if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
        raise UserError(f"not a format {FORMAT} memory document", path=path, field="format")
    try:
        return MemoryState.model_validate(data)
    except ValidationError as e:
        raise user_error(e, path) from None
