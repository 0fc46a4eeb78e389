"""The parts of the library API (`moscopt.api`) that are not its public calls: `FunctionLM`
(an `LM` over a plain function) and how arguments become a config, a benchmark, a deployment
and LMs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from moscopt.config import Config, load_config
from moscopt.errors import UserError
from moscopt.lm.errors import LMFatalError

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.core.skills import Pool
    from moscopt.lm.base import LM, Completion, Message

T = TypeVar("T")
Tasks = Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Mapping[str, Any]]]
LMLike = Any  # an `LM`, a function (messages) -> str, or a model string
ConfigLike = Config | Mapping[str, Any] | str | Path | None


class LMFunctionError(LMFatalError):
    """The caller's LM function raised (its exception is the `__cause__`) or returned something
    that is not a string: the run stops, its state saved, as for any fatal LM error."""


class FunctionLMWarning(UserWarning):
    """A `FunctionLM`'s answers do not fit what moscopt asked (see `FunctionLM`)."""


class FunctionLM:
    """An `LM` over a function `fn(messages) -> str` (or `fn(messages, **params)` with the call's
    `schema`, `sample`, `purpose`, `temperature`, `top_p`, `max_tokens` as keywords, when it
    takes them). Structured calls are parsed and validated as moscopt's own client does.

    moscopt calls the LM for several purposes: `agent` (solve the task), `gate` (pick skills),
    `reflect-*`, `merge-*` (analyse failures), `propose-*` (JSON edits under `schema`),
    `evolve-*`, `memory`, `distill`. A function that answers every call alike (no `purpose`)
    makes every proposal unusable: the first answer that is not the JSON a call's schema asks
    for raises a `FunctionLMWarning` saying so. An exception inside the function becomes an
    `LMFunctionError` naming the function and the call's purpose (the original as its cause)."""

    def __init__(self, fn: Callable[..., str], *, model: str = "python/function") -> None:
        import inspect

        from moscopt.lm.budget import LMStats

        self.fn = fn
        self._model = model
        self.stats = LMStats()
        params = inspect.signature(fn).parameters.values()
        self._keywords = any(p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        self._warned = False
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__

    @property
    def model(self) -> str:
        return self._model

    def complete(self, messages: Sequence[Message], **params: Any) -> Completion:
        from moscopt.lm.base import Completion, check_messages
        from moscopt.lm.errors import LMOutputError
        from moscopt.lm.structured import with_data

        checked = [dict(m) for m in check_messages(messages)]
        purpose = params.get("purpose") or "unnamed"
        try:
            text = self.fn(checked, **params) if self._keywords else self.fn(checked)
        except Exception as e:
            raise LMFunctionError(
                f"the LM function {self.name} raised {type(e).__name__} on a call for '{purpose}': "
                f"{' '.join(str(e).split())[:300] or '(no message)'}"
            ) from e
        if not isinstance(text, str):
            raise LMFunctionError(
                f"the LM function {self.name} returned {type(text).__name__}, not str, on a "
                f"call for '{purpose}'"
            )
        self.stats.calls += 1
        completion = Completion(text=text, model=self._model, sample=params.get("sample", 0))
        try:
            return with_data(completion, params.get("schema"), self._model)
        except LMOutputError:
            self._warn_unusable(purpose)
            raise

    def _warn_unusable(self, purpose: str) -> None:
        """Once per instance: a structured call got an answer that is not its JSON."""
        if self._warned:
            return
        self._warned = True
        import warnings

        if self._keywords:
            advice = (
                "when a call has a `schema`, answer JSON that matches it (see moscopt.FunctionLM)"
            )
        else:
            advice = (
                "moscopt calls it for several purposes (agent, gate, propose-skill, ...): take "
                "`purpose` and `schema` as keyword arguments, e.g. `def lm(messages, *, "
                "purpose='', schema=None, **_)`, and answer a call with a schema in JSON that "
                "matches it (see moscopt.FunctionLM)"
            )
        warnings.warn(
            f"the LM function {self.name} answered a call for '{purpose}' with text that is not "
            f"the JSON its schema asks for, so that edit is unusable: {advice}",
            FunctionLMWarning,
            stacklevel=2,
        )

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> Completion:
        return await asyncio.to_thread(self.complete, messages, **params)


def config_of(config: ConfigLike, lm: LMLike, optimizer_lm: LMLike) -> Config:
    if isinstance(config, Config):
        cfg = config
    elif isinstance(config, str | Path):
        cfg = load_config(config)
    else:
        cfg = load_config(None, dict(config or {}))
    updates: dict[str, Any] = {}
    if isinstance(lm, str):
        updates["model"] = lm
    if isinstance(optimizer_lm, str):
        updates["optimizer_model"] = optimizer_lm
    return cfg.model_copy(update=updates) if updates else cfg


def benchmark_of(
    cfg: Config, tasks: Tasks | None, grader: Any, benchmark: str | None, instructions: str
) -> tuple[Benchmark, Splits, str]:
    from moscopt.app.benchmark import benchmark_ref, resolve_benchmark
    from moscopt.benchmarks.inline import inline_benchmark

    if tasks is not None and benchmark is not None:
        raise UserError("give tasks (a list of dicts) or benchmark (a name), not both")
    if tasks is not None:
        inline, splits = inline_benchmark(tasks, grader, instructions=instructions, seed=cfg.seed)
        return inline, splits, f"python:{inline.name}"
    if benchmark is None and cfg.benchmark is None:
        raise UserError("give tasks (a list of dicts) or benchmark (a name)", field="tasks")
    bench, splits = resolve_benchmark(cfg, benchmark)
    return bench, splits, benchmark_ref(bench)


def deployment_of(skills: Pool | str | Path | None, cfg: Config) -> tuple[Any, Any, Any, Config]:
    """(pool, gate stats, static table, config with the deployment's K) of `skills`."""
    from moscopt.core.skills import Pool
    from moscopt.exports.manifest import MANIFEST_FILE
    from moscopt.routing.build import gate_stats
    from moscopt.run.rundir import STATE_FILE, RunDir

    if skills is None or isinstance(skills, Pool):
        return skills, None, None, cfg
    path = Path(skills)
    if (path / STATE_FILE).is_file():
        run = RunDir.open(path)
        state = run.load_state()
        frozen = run.load_config()
        cfg = cfg.model_copy(update={"pool": frozen.pool, "gating": frozen.gating})
        return run.load_pool(state), gate_stats(cfg, state), None, cfg
    if (path / MANIFEST_FILE).is_file():
        from moscopt.exports import open_export

        dep = open_export(path)
        k = dep.manifest.k
        cfg = cfg.model_copy(update={"pool": cfg.pool.model_copy(update={"k": k})})
        return dep.pool, dep.gate_stats(cfg.credit.c_min), dep.table, cfg
    return Pool.load(path), None, None, cfg


@contextlib.contextmanager
def lms_of(
    cfg: Config,
    run: Any,
    lm: LMLike,
    optimizer_lm: LMLike,
    roles: tuple[str, ...] = ("agent", "optimizer"),
) -> Iterator[tuple[LM, LM]]:
    """The agent and optimizer LMs: the caller's objects as they are; model strings (or
    nothing: the config's models) built by moscopt and closed afterwards."""
    agent, optimizer = as_lm(lm), as_lm(optimizer_lm)
    if agent is not None and optimizer is None and not isinstance(optimizer_lm, str):
        yield agent, agent  # the caller's LM in both roles
        return
    from moscopt.app.assembly import open_lms

    if agent is not None:  # the caller's agent LM, the optimizer model built by moscopt
        assert isinstance(optimizer_lm, str)
        built = cfg.model_copy(update={"model": optimizer_lm, "optimizer_model": None})
        with open_lms(built, run, roles=("agent",), log_events=run is not None) as lms:
            yield agent, lms.agent
        return
    wanted: Any = roles if optimizer is None else ("agent",)
    with open_lms(cfg, run, roles=wanted, log_events=run is not None) as lms:
        yield lms.agent, optimizer or lms.optimizer or lms.agent


def as_lm(value: LMLike) -> LM | None:
    if value is None or isinstance(value, str):
        return None
    if hasattr(value, "acomplete") and hasattr(value, "model"):
        lm: LM = value
        return lm
    if callable(value):
        return FunctionLM(value)
    raise UserError(f"lm must be an LM, a function or a model string, not {type(value).__name__}")


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to the end: here, or in a worker thread when a loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
