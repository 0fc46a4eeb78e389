"""Where the files that ship with moscopt live (seed skill library, benchmark specs, prompts).

In a wheel, the top-level `skills/` and `benchmarks/` folders are packaged as
`moscopt/_data/...`; in a source checkout (editable install) they are read from the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def data_dir(name: str) -> Path:
    """Path of a shipped data folder (`skills` or `benchmarks`)."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"moscopt's shipped '{name}' folder is missing from the installation")


def seed_skills_dir() -> Path:
    return data_dir("skills")


def benchmark_specs_dir() -> Path:
    return data_dir("benchmarks")


def prompts_dir() -> Path:
    return _PACKAGE / "prompts"
