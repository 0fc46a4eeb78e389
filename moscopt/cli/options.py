"""Options shared by the commands that call models, declared once.

A command asks for the shared options it takes by name with `@shared(...)`; it receives them as
one typed `Shared` value (`opts`) and turns them into dotted config keys with `opts.overrides()`,
which `Config` checks like a moscopt.yaml. `--set key=value` (repeatable) reaches any config key,
in the manner of simonw/llm's `-o`: `--set optimizer.acceptance=strict`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import typer

from moscopt.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Shared:
    """The shared options of one invocation (None: not given)."""

    model: str | None = None
    optimizer_model: str | None = None
    judge_model: str | None = None
    api_base: str | None = None
    config: Path | None = None
    seed: int | None = None
    concurrency: int | None = None
    max_calls: int | None = None
    max_cost: float | None = None
    data: Path | None = None
    limit: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    no_cache: bool = False
    batch: bool = False
    set: list[str] = field(default_factory=list)
    json_out: bool = False

    def overrides(self, **extra: Any) -> dict[str, Any]:
        """The options as dotted config keys; `extra` adds a command's own (None: not given).

        Each value is checked on its own first, so that a bad one is blamed on its flag
        (`--max-calls 0: ...`), never on a line of moscopt.yaml; values that are only wrong
        together with the file (K > N) are checked with the file."""
        out: dict[str, Any] = {
            "model": self.model,
            "optimizer_model": self.optimizer_model,
            "judge_model": self.judge_model,
            "api_base": self.api_base,
            "seed": self.seed,
            "llm.concurrency": self.concurrency,
            "llm.max_calls": self.max_calls,
            "llm.max_cost": self.max_cost,
            "data.path": str(self.data) if self.data is not None else None,
            "data.limit": self.limit,
            "sampling.max_tokens": self.max_tokens,
            "llm.timeout": self.timeout,
            "llm.cache": False if self.no_cache else None,
            "llm.batch": True if self.batch else None,
        }
        out.update(extra)
        settings = parse_settings(self.set)
        out.update(settings)
        given = {k: v for k, v in out.items() if v is not None}
        check_flags(given, {k: f"--set {k}" for k in settings})
        return given


# the flag that sets each dotted key (a command's own flags included), for error messages
FLAG_OF = {
    "model": "--model",
    "optimizer_model": "--optimizer-model",
    "judge_model": "--judge-model",
    "api_base": "--api-base",
    "seed": "--seed",
    "llm.concurrency": "--concurrency",
    "llm.max_calls": "--max-calls",
    "llm.max_cost": "--max-cost",
    "llm.timeout": "--timeout",
    "llm.batch": "--batch",
    "data.path": "--data",
    "data.limit": "--limit",
    "sampling.max_tokens": "--max-tokens",
    "pool.n": "--n",
    "pool.k": "--k",
    "training.epochs": "--epochs",
    "training.max_steps_per_epoch": "--steps-per-epoch",
    "optimizer.acceptance": "--acceptance",
    "gating.policy": "--gate",
    "gating.granularity": "--gating",
    "tracing.observers": "--trace",
}


def check_flags(values: dict[str, Any], names: dict[str, str]) -> None:
    """A `UserError` naming the flag of the first value that is invalid by itself."""
    from pydantic import ValidationError

    from moscopt.config import Config, set_dotted
    from moscopt.core.validation import describe

    for dotted, value in values.items():
        data: dict[str, Any] = {}
        set_dotted(data, dotted, value)
        try:
            Config.model_validate(data)
        except ValidationError as e:
            field, msg = describe(e)
            if field == dotted:
                flag = names.get(dotted) or FLAG_OF.get(dotted, f"--set {dotted}")
                # numbers and switches are echoed; text never is (a URL may hold a password)
                echo = isinstance(value, int | float) and not isinstance(value, bool)
                sep = "=" if flag.startswith("--set ") else " "
                shown = f"{flag}{sep}{value}" if echo else flag
                raise UserError(f"{shown} (field '{dotted}'): {msg}") from None


def parse_settings(items: list[str]) -> dict[str, Any]:
    """`key=value` pairs; each value is read as YAML (`3`, `true`, `[a, b]`, `null`)."""
    import yaml

    from moscopt.core import yamlio

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set {item!r}: write it as key=value", field="set")
        try:
            out[key.strip()] = yamlio.load(raw) if raw.strip() else None
        except yaml.YAMLError as e:
            shown = item if len(item) <= 80 else item[:77] + "..."
            problem = getattr(e, "problem", None)
            problem = f" ({problem})" if problem else ""
            raise UserError(
                f"--set {shown!r}: the value is not valid YAML{problem}", field="set"
            ) from None
    return out


# name -> (type, typer option)
OPTIONS: dict[str, tuple[Any, Any]] = {
    "model": (
        str | None,
        typer.Option(
            None,
            "--model",
            envvar="MOSCOPT_MODEL",
            help="litellm model string (default: the config's, else local/smollm2).",
        ),
    ),
    "optimizer_model": (
        str | None,
        typer.Option(
            None, "--optimizer-model", help="Model that reflects and edits (default: --model)."
        ),
    ),
    "judge_model": (
        str | None,
        typer.Option(
            None,
            "--judge-model",
            help="Model that scores rubric criteria of --tasks files (default: the optimizer's).",
        ),
    ),
    "api_base": (
        str | None,
        typer.Option(
            None, "--api-base", envvar="MOSCOPT_API_BASE", help="OpenAI-compatible endpoint URL."
        ),
    ),
    "config": (
        Path | None,
        typer.Option(
            None,
            "--config",
            envvar="MOSCOPT_CONFIG",
            help="Project config (default: nearest moscopt.yaml).",
        ),
    ),
    "seed": (int | None, typer.Option(None, "--seed", help="Random seed.")),
    "concurrency": (
        int | None,
        typer.Option(None, "--concurrency", help="LLM requests in flight."),
    ),
    "max_calls": (int | None, typer.Option(None, "--max-calls", help="Hard budget: LLM calls.")),
    "max_cost": (
        float | None,
        typer.Option(None, "--max-cost", help="Hard budget: US dollars."),
    ),
    "data": (
        Path | None,
        typer.Option(None, "--data", help="Local JSONL file or folder instead of the hub."),
    ),
    "limit": (
        int | None,
        typer.Option(None, "--limit", help="Use only the first N tasks of each split."),
    ),
    "max_tokens": (
        int | None,
        typer.Option(None, "--max-tokens", help="Longest answer per LLM call, in tokens."),
    ),
    "timeout": (
        float | None,
        typer.Option(None, "--timeout", help="Seconds per LLM request (default 120)."),
    ),
    "no_cache": (bool, typer.Option(False, "--no-cache", help="Do not reuse cached responses.")),
    "batch": (
        bool,
        typer.Option(
            False,
            "--batch",
            help="Evaluation and validation through the provider's batch API (openai/ models).",
        ),
    ),
    "set": (
        list[str],
        typer.Option(
            [],
            "--set",
            metavar="KEY=VALUE",
            help="Any config key, e.g. optimizer.acceptance=strict.",
        ),
    ),
    "json_out": (bool, typer.Option(False, "--json", help="Machine-readable output.")),
}
MODEL_OPTIONS = tuple(n for n in OPTIONS if n != "json_out")


def trace_option() -> Any:
    """`--trace`, of `train` and `eval`: the observers that record the run (`moscopt.tracing`)."""
    return typer.Option(
        None,
        "--trace",
        envvar="MOSCOPT_TRACE",
        help="Record the run with an observer: otel (OpenTelemetry spans), mlflow or wandb; "
        "repeatable; each needs its extra (pip install 'moscopt[otel]'). Sets tracing.observers.",
    )


@dataclass(frozen=True)
class RunShape:
    """The benchmark and the shape of a training run: `train`, `plan`, `ablate`, `compare`."""

    benchmark: str | None = None
    tasks: Path | None = None
    held_out: Path | None = None
    n: int | None = None
    k: int | None = None
    epochs: int | None = None
    steps_per_epoch: int | None = None

    def check_tasks(self) -> None:
        """--tasks stands for --benchmark; --held-out goes with --tasks."""
        if self.tasks is not None and self.benchmark is not None:
            raise UserError("give either --benchmark or --tasks, not both", field="tasks")
        if self.held_out is not None and self.tasks is None:
            raise UserError("--held-out goes with --tasks FILE", field="held_out")

    def benchmark_or_tasks(self) -> str | None:
        """The benchmark to name for a command that takes a task file as a benchmark (a study):
        --benchmark, or the --tasks file (its tasks split three ways; no --held-out there)."""
        self.check_tasks()
        if self.held_out is not None:
            raise UserError(
                "--held-out applies to train and plan; here put held-out tasks in the task "
                "file with 'split': 'test'",
                field="held_out",
            )
        return str(self.tasks.resolve()) if self.tasks is not None else self.benchmark

    def config_keys(self) -> dict[str, Any]:
        return {
            "pool.n": self.n,
            "pool.k": self.k,
            "training.epochs": self.epochs,
            "training.max_steps_per_epoch": self.steps_per_epoch,
        }


SHAPE_OPTIONS: dict[str, tuple[Any, Any]] = {
    "benchmark": (
        str | None,
        typer.Option(None, "--benchmark", "-b", help="Benchmark name or spec file."),
    ),
    "tasks": (
        Path | None,
        typer.Option(
            None,
            "--tasks",
            help="A task file (JSONL or YAML) whose tasks carry their own judges: rule checks, "
            "rubric criteria or answers. Its tasks train and validate.",
        ),
    ),
    "held_out": (
        Path | None,
        typer.Option(
            None,
            "--held-out",
            help="With --tasks: a task file of held-out tasks, the certificate's test split.",
        ),
    ),
    "n": (int | None, typer.Option(None, "--n", help="Pool size N.")),
    "k": (int | None, typer.Option(None, "--k", help="Skills activated per task K.")),
    "epochs": (int | None, typer.Option(None, "--epochs", help="Epochs.")),
    "steps_per_epoch": (
        int | None,
        typer.Option(None, "--steps-per-epoch", help="Cap on skill-editing minibatches per epoch."),
    ),
}


def run_shape(fn: F) -> F:
    """Add the `SHAPE_OPTIONS` to a command; it receives them as `shape: RunShape`."""
    return options_group(SHAPE_OPTIONS, tuple(SHAPE_OPTIONS), "shape", RunShape)(fn)


def shared(*names: str) -> Callable[[F], F]:
    """Add the shared options `names` to a command; it receives them as `opts: Shared`."""
    unknown = set(names) - set(OPTIONS) - {f.name for f in fields(Shared)}
    if unknown:
        raise ValueError(f"unknown shared options: {sorted(unknown)}")
    return options_group(OPTIONS, names, "opts", Shared)


def options_group(
    table: dict[str, tuple[Any, Any]], names: tuple[str, ...], param: str, pack: Callable[..., Any]
) -> Callable[[F], F]:
    """Add the options `names` of `table` (name -> (type, typer option)) to a command, which
    receives them packed as one value, `param=pack(**values)`. Groups can be stacked."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != param]
        added = [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=table[n][1],
                              annotation=table[n][0])
            for n in names
        ]  # fmt: skip

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            given = {n: kwargs.pop(n) for n in names}
            return fn(**{param: pack(**given)}, **kwargs)

        command.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in own + added}
        if hasattr(command, "__wrapped__"):
            del command.__wrapped__  # typer must see this signature, not the function's
        return command  # type: ignore[return-value]

    return wrap
