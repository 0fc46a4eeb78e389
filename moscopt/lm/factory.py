"""`build_lm`: the one place that turns a `Config` into an `LM`, and picks its transport."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from moscopt.config import Config
from moscopt.lm.budget import Budget
from moscopt.lm.cache import ResponseCache, shared_cache_dir
from moscopt.lm.client import EventSink, LiteLLMClient
from moscopt.lm.endpoint import make_transport
from moscopt.lm.errors import LMSetupError
from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER
from moscopt.lm.local import check_installed
from moscopt.lm.transport import DIRECT_PROVIDERS, Transport

if TYPE_CHECKING:
    from moscopt.run.rundir import EventLog

Role = Literal["agent", "optimizer", "judge"]


def build_lm(
    config: Config,
    *,
    role: Role = "agent",
    cache_dir: Path | None = None,
    record: Path | None = None,
    cache: ResponseCache | None = None,
    events: EventLog | EventSink | None = None,
    budget: Budget | None = None,
    api_key: str | None = None,
) -> LiteLLMClient:
    """The LM for `role`: the agent's `config.model`, the optimizer's model, or the judge's
    (`config.effective_judge_model`: it scores rubric criteria).

    `cache_dir`: where the response cache lives (default: `shared_cache_dir(config.llm)`, the
    project's `.moscopt/cache`); `record`: the file listing the cache entries a run used
    (normally `<run>/cache/used-keys.txt`); `cache`: an open cache to use instead (the one of
    the run's other LM); `config.llm.cache = False` turns caching off.
    `events`: an `EventLog` (each call becomes an `llm_call` event) or any callable taking the
    event dict. `budget`: share one `Budget` between the agent and optimizer LMs of a run
    (default: a new one from `config.llm`). `api_key` overrides the provider's environment
    variable; it is never stored or logged. `config.llm.deployments` put the agent's model
    (and the optimizer's, when it is the same model) behind litellm's Router.

    Raises `LMSetupError` (exit 2) for a model string litellm cannot route, a hosted model
    whose key variable is unset, a malformed `api_base`, or a missing embedded model (with the
    install commands).
    """
    model = model_for(config, role)
    field = {"agent": "model", "optimizer": "optimizer_model", "judge": "judge_model"}[role]
    routed = bool(config.llm.deployments) and model == config.model
    transport: Transport | None = None
    sink = _sink(events)
    if routed:
        from moscopt.lm.deployments import DeploymentsTransport

        for i, d in enumerate(config.llm.deployments):
            check_model(d.model, d.api_base, field=f"llm.deployments.{i}.model")
        transport = DeploymentsTransport(
            model,
            config.llm.deployments,
            config.llm.routing,
            timeout=config.llm.timeout,
            max_response_bytes=config.llm.max_response_bytes,
            report=sink,
            max_connections=config.llm.concurrency,
            direct=config.llm.transport == "auto",
        )
    else:
        check_model(model, config.api_base, api_key=api_key, field=field)
    if not config.llm.cache:
        cache = None
    elif cache is None:
        where = cache_dir if cache_dir is not None else shared_cache_dir(config.llm)
        cache = ResponseCache(where, record=record)
    if config.llm.batch and role == "agent":
        where = record.parent if record is not None else cache_dir or shared_cache_dir(config.llm)
        transport = batching(model, config, transport, where / "batches", api_key=api_key)
    return LiteLLMClient(
        model,
        sampling=config.sampling,
        llm=config.llm,
        seed=config.seed,
        api_base=None if routed else config.api_base,
        cache=cache,
        budget=budget or Budget(config.llm.max_calls, config.llm.max_cost),
        events=sink,
        api_key=api_key,
        transport=transport,
    )


def model_for(config: Config, role: Role) -> str:
    """The model string of `role` under `config`."""
    if role == "agent":
        return config.model
    return config.effective_optimizer_model if role == "optimizer" else config.effective_judge_model


def batching(
    model: str,
    config: Config,
    transport: Transport | None,
    where: Path,
    *,
    api_key: str | None = None,
) -> Transport:
    """`transport` (default: the usual one) behind the provider batch mode of `moscopt.lm.batch`,
    its batches recorded in `where`; `LMSetupError` naming `--batch` for a model that cannot."""
    from moscopt.lm.batch import BatchTransport, batch_refusal
    from moscopt.lm.batch_store import BatchStore

    why = batch_refusal(model, config.api_base, config.llm)
    if why is not None:
        raise LMSetupError(why)
    inner = transport or make_transport(model, config.api_base, config.llm, api_key=api_key)
    return BatchTransport(
        inner, model, BatchStore(where), config.llm, api_base=config.api_base, api_key=api_key
    )


def check_model(
    model: str, api_base: str | None, *, api_key: str | None = None, field: str = "model"
) -> None:
    """Fail early, with one clear message, on a model that cannot be called as configured."""
    if api_base is not None:
        check_api_base(api_base, field="api_base")
    provider, slash, name = model.partition("/")
    if model == "mcp/client":  # the MCP client's model: only while `moscopt mcp` serves one
        from moscopt.lm.mcp_client import check_sampler

        check_sampler()
        return
    if provider == LOCAL_PROVIDER and slash:
        if name != "smollm2":
            raise LMSetupError(
                f"unknown local model '{model}': the embedded model is 'local/smollm2'",
                field=field,
            )
        check_installed()
        return
    if api_base is not None and provider in DIRECT_PROVIDERS and slash:
        return  # an OpenAI-compatible endpoint: the server decides about keys and models
    from moscopt.lm.litellm_env import litellm

    module = litellm()
    try:
        module.get_llm_provider(model=model, api_base=api_base)
    except Exception:
        raise LMSetupError(
            f"litellm does not know the provider of '{model}': write it as "
            "'provider/model' (e.g. 'openai/gpt-4.1-mini', 'ollama/qwen3:8b', "
            "'hosted_vllm/<name>' with --api-base), or use 'local/smollm2'",
            field=field,
        ) from None
    if api_key is None and api_base is None:
        try:
            env = module.validate_environment(model=model)
        except Exception:
            return  # litellm could not tell; the provider will answer 401 if a key is missing
        missing = [str(k) for k in env.get("missing_keys") or []]
        if missing and not env.get("keys_in_environment", False):
            raise LMSetupError(
                f"model '{model}' needs {', '.join(missing)} set in the environment "
                "(or use --api-base for a local OpenAI-compatible server)",
                field=field,
            )


def check_api_base(url: str, *, field: str = "api_base") -> None:
    """An endpoint must be an http(s) URL with a host (`LMSetupError` otherwise)."""
    parts = urlsplit(url.strip())
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LMSetupError(
            f"api_base '{url}' is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1",
            field=field,
        )


def _sink(events: EventLog | EventSink | None) -> EventSink | None:
    if events is None:
        return None
    append = getattr(events, "append", None)
    if append is not None and not isinstance(events, list):
        from moscopt.run.ledger import lm_event

        log_append: Callable[..., Any] = append

        def to_log(record: dict[str, Any]) -> None:
            log_append(lm_event(record))

        return to_log
    if callable(events):
        return events
    raise TypeError("events must be an EventLog or a callable taking one dict")
