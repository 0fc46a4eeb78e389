"""`Config`, the whole of `moscopt.yaml`, and `load_config`: defaults <- file <- flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from moscopt.config.runtime import (
    AgentConfig,
    DataConfig,
    LLMConfig,
    MemoryConfig,
    SamplingConfig,
    TracingConfig,
    check_api_base,
)
from moscopt.config.sections import (
    CreditConfig,
    EvolutionConfig,
    GatingConfig,
    NichesConfig,
    OptimizerConfig,
    PoolConfig,
    RouterConfig,
    Section,
    TrainingConfig,
)
from moscopt.core import yamlio
from moscopt.core.validation import describe
from moscopt.errors import UserError
from moscopt.run.fsio import read_text

CONFIG_FILE = "moscopt.yaml"
DEFAULT_MODEL = "local/smollm2"


class Config(Section):
    model: str = DEFAULT_MODEL
    optimizer_model: str | None = None
    # scores rubric criteria of task files (moscopt.benchmarks.rubric); default: the optimizer's
    judge_model: str | None = None
    api_base: str | None = None
    seed: int = Field(42, description="seeds the splits, the samples and every random choice")
    benchmark: str | None = None
    skills_dir: str = "skills"
    runs_dir: str = "runs"
    pool: PoolConfig = Field(default_factory=PoolConfig)
    gating: GatingConfig = Field(default_factory=GatingConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    credit: CreditConfig = Field(default_factory=CreditConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    evolution: EvolutionConfig = Field(default_factory=EvolutionConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    niches: NichesConfig = Field(default_factory=NichesConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return check_api_base(v)

    @property
    def effective_optimizer_model(self) -> str:
        return self.optimizer_model or self.model

    @property
    def effective_judge_model(self) -> str:
        return self.judge_model or self.effective_optimizer_model

    def to_yaml(self) -> str:
        """The fully resolved config, deterministic (field order fixed by the models)."""
        return yamlio.dump(
            self.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=2**31 - 1
        )


def load_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Defaults <- the user's config file (`user_config_path`, if there) <- file at `path` (if
    given) <- `overrides` (dotted keys; None values ignored). A run's frozen config names every
    key, so the user's file changes nothing in a run made before."""
    data: dict[str, Any] = {}
    text = ""
    if path is not None:
        path = Path(path)
        text, data = _read_mapping(path)
    file_data = data
    data = _merged(user_defaults(), data)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            set_dotted(data, dotted, value)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        field, msg = describe(e)
        flag_set = any(
            d == field or d.startswith(field + ".") or field.startswith(d + ".")
            for d in overrides or {}
        )
        in_file = _lookup(file_data, field) is not _MISSING
        line = _line_of(text, field) if (path is not None and in_file) else None
        if flag_set and not in_file:
            raise UserError(msg, field=field) from None
        raise UserError(msg, path=path, line=line, field=field) from None


_MISSING = object()
USER_CONFIG_ENV = "MOSCOPT_USER_CONFIG"


def user_config_path() -> Path:
    """The user's config file: $MOSCOPT_USER_CONFIG, else `config.yaml` in the platform's user
    config folder (platformdirs: ~/.config/moscopt on Linux, ~/Library/Application
    Support/moscopt on macOS, %LOCALAPPDATA%\\moscopt on Windows)."""
    given = os.environ.get(USER_CONFIG_ENV)
    if given:
        return Path(given).expanduser()
    from platformdirs import user_config_path as config_folder

    return config_folder("moscopt", appauthor=False) / "config.yaml"


def user_defaults() -> dict[str, Any]:
    """The user's config file's keys ({} when there is none), checked on their own: a bad one
    is a `UserError` naming that file, its line and field."""
    path = user_config_path()
    if not path.is_file():
        return {}
    text, data = _read_mapping(path)
    try:
        Config.model_validate(data)
    except ValidationError as e:
        field, msg = describe(e)
        raise UserError(msg, path=path, line=_line_of(text, field), field=field) from None
    return data


def _read_mapping(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of the YAML file at `path` and the mapping it holds; `UserError` otherwise."""
    text = read_text(path)
    try:
        loaded = yamlio.load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UserError(
            problem if problem == yamlio.ALIASES_REFUSED else f"not valid YAML: {problem}",
            path=path,
            line=min(mark.line + 1, max(text.count("\n"), 1)) if mark is not None else None,
        ) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise UserError("must be a YAML mapping (key: value)", path=path, line=1)
    return text, loaded


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with `top`'s keys laid over it (mappings merged key by key)."""
    out = _deep_copy(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = _deep_copy(value)
    return out


def _deep_copy(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _deep_copy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deep_copy(v) for v in d]
    return d


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[leaf] = value


def _lookup(data: Any, dotted: str) -> Any:
    node = data
    for key in dotted.split("."):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def _line_of(text: str, dotted: str) -> int | None:
    """1-based line of the key `dotted` in YAML `text`, if it can be found."""
    try:
        node: Any = yaml.compose(text, Loader=yamlio.LOADER)
    except yaml.YAMLError:
        return None
    line = None
    for key in dotted.split("."):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == key:
                    line = k.start_mark.line + 1
                    node = v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            line = node.start_mark.line + 1
        else:
            return line
    return line
