"""A moscopt project folder: `moscopt.yaml`, the starting `skills/` and `runs/`."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from moscopt.config import CONFIG_FILE, Config, load_config
from moscopt.core.resources import seed_skills_dir
from moscopt.core.skills import Pool
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text, read_text

GITIGNORE_LINES = ("runs/*/cache/", "runs/*/.lock")


def config_template() -> str:
    return read_text(Path(__file__).parents[1] / "templates" / CONFIG_FILE)


@dataclass(frozen=True)
class InitResult:
    root: Path
    created: list[Path]


def init_project(root: str | Path, *, force: bool = False) -> InitResult:
    """Scaffold a project: config template, the seed skill library, a .gitignore entry.

    Refuses (UserError, nothing written) if a config or a non-empty `skills/` is already there,
    unless `force`, which replaces the config and the seed skills but never other files.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise UserError("exists and is not a directory", path=root)
    config_path = root / CONFIG_FILE
    skills_dir = root / "skills"
    if not force:
        if config_path.exists():
            raise UserError("already exists (use --force to replace it)", path=config_path)
        if skills_dir.exists() and any(skills_dir.iterdir()):
            raise UserError("already exists and is not empty (use --force)", path=skills_dir)
    Pool.load(seed_skills_dir(), require_gate=True)  # the shipped library must be valid
    root.mkdir(parents=True, exist_ok=True)
    created = [config_path]
    atomic_write_text(config_path, config_template())
    for folder in sorted(seed_skills_dir().iterdir()):
        if (folder / "SKILL.md").is_file():
            shutil.copytree(folder, skills_dir / folder.name, dirs_exist_ok=True)
    created.append(skills_dir)
    gitignore = root / ".gitignore"
    existing = read_text(gitignore) if gitignore.exists() else ""
    missing = [ln for ln in GITIGNORE_LINES if ln not in existing.splitlines()]
    if missing:
        sep = "" if not existing or existing.endswith("\n") else "\n"
        atomic_write_text(gitignore, existing + sep + "\n".join(missing) + "\n")
        created.append(gitignore)
    return InitResult(root=root, created=created)


def find_config(start: str | Path | None = None) -> Path | None:
    """The nearest `moscopt.yaml` in `start` or its parents."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Project:
    config_path: Path | None
    config: Config

    @property
    def root(self) -> Path:
        return self.config_path.parent if self.config_path else Path.cwd()

    @property
    def skills_dir(self) -> Path:
        return (self.root / self.config.skills_dir).resolve()

    @property
    def runs_dir(self) -> Path:
        return (self.root / self.config.runs_dir).resolve()

    def load_pool(self) -> Pool:
        return Pool.load(self.skills_dir)


def open_project(
    config: str | Path | None = None, overrides: dict[str, object] | None = None
) -> Project:
    """Load the project's config (explicit path, else the nearest moscopt.yaml, else defaults)."""
    path = Path(config) if config is not None else find_config()
    return Project(config_path=path, config=load_config(path, overrides))
