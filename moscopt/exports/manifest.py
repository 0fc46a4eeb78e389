"""`moscopt-export.json`: what an export is and where it came from (no timestamps, no paths).

Deterministic: the same run exported twice gives the same bytes. The run is named by its folder
name, step and pool digest, never by an absolute path (an export is shipped elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moscopt.core import jsonio
from moscopt.core.validation import user_error
from moscopt.errors import UserError
from moscopt.run.fsio import pretty_json, read_text

MANIFEST_FILE = "moscopt-export.json"
SKILLS_DIR = "skills"  # the skills folder of a mixture, static or router export
FORMAT = 1
Mode = Literal["mixture", "static", "topq", "distilled", "router", "agents", "plugin"]
MODES: tuple[Mode, ...] = (
    "mixture", "static", "topq", "distilled", "router", "agents", "plugin",
)  # fmt: skip


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provenance(_Model):
    run: str  # the run directory's name
    step: int
    epoch: int
    status: str
    checkpoint: str | None
    pool_digest: str | None


class Manifest(_Model):
    format: int = FORMAT
    mode: Mode
    moscopt_version: str
    benchmark: str | None
    k: int = Field(ge=1)
    n: int = Field(ge=1)
    model: str
    optimizer_model: str
    validation_score: float | None  # the mixture's, as recorded by training
    q_scores: dict[str, float]
    activations: dict[str, int]
    enriched: bool  # whether the gate saw Q-scores and activations in its table
    skills: list[str]  # the skill folders under skills/ (the gate included for mixture)
    provenance: Provenance
    static: dict[str, Any] | None = None  # how the table reproduces the gate (static only)
    distilled: dict[str, Any] | None = None  # merged skills and validation scores (distilled)
    agents: dict[str, Any] | None = None  # router skill, hinted skills, the table (agents)
    router: dict[str, Any] | None = None  # router.json's summary (router only)
    memory: dict[str, Any] | None = None  # memory.json's summary (mixture, router; if fitted)
    plugin: dict[str, Any] | None = None  # the Claude Code plugin's name and files (plugin)

    def dumps(self) -> str:
        return pretty_json(self.model_dump(mode="json"))


def load_manifest(folder: Path) -> Manifest:
    """The manifest of the export in `folder`; a missing or bad one is a `UserError`."""
    path = folder / MANIFEST_FILE
    if not folder.exists():
        raise UserError("export not found", path=folder)
    if not path.is_file():
        raise UserError(f"not a moscopt export (no {MANIFEST_FILE})", path=folder)
    text = read_text(path)
    try:
        data = jsonio.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"not valid JSON: {e.msg}", path=path, line=e.lineno) from None
    if not isinstance(data, dict):
        raise UserError("must be a JSON object", path=path)
    if data.get("format", FORMAT) != FORMAT:
        raise UserError(
            f"format {data.get('format')} is not one this moscopt reads ({FORMAT})",
            path=path,
            field="format",
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as e:
        raise user_error(e, path) from None
