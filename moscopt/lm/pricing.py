"""Cost of a call, from the price map that ships inside the litellm package, read as data.

The map is a JSON file in litellm's package folder, located with `find_spec` and parsed with
`json`: litellm itself is never imported for a price (its import takes seconds and would stall
every request in flight). The file is read once per process, in a background thread that a
client starts when it is built (`Pricing.prefetch`), so a call rarely waits for it. A model the
map does not know costs 0, and a warning says so once per model; the embedded model is free.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moscopt.core.jsonio import loads
from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER

log = logging.getLogger("moscopt.lm")
# Names of the bundled map in the litellm releases we support (newest first).
PRICE_FILES = (
    "model_prices_and_context_window_backup.json",
    "model_prices_and_context_window.json",
)

_noted_lock = threading.Lock()
_noted: set[str] = set()  # unpriced models already warned about in this process
_map_lock = threading.Lock()
_map_future: Future[dict[str, Any]] | None = None  # the process's one read of the map


@dataclass(frozen=True)
class Prices:
    """USD per token. Cached prompt tokens are billed at `cache_read` where the provider says."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


FREE = Prices(0.0, 0.0, 0.0, 0.0)


def price_map_path() -> Path | None:
    """The bundled price map inside the installed litellm package (None if not found)."""
    spec = importlib.util.find_spec("litellm")  # locates the package without running it
    for location in list(spec.submodule_search_locations or []) if spec else []:
        for name in PRICE_FILES:
            path = Path(location) / name
            if path.is_file():
                return path
    return None


def _read_map() -> dict[str, Any]:
    path = price_map_path()
    if path is None:
        log.warning("litellm's price map was not found: LLM calls are counted at $0")
        return {}
    try:
        data = loads(path.read_bytes())  # orjson: a 3.5 MB file in ~15 ms instead of ~50
    except (OSError, ValueError) as e:
        log.warning("litellm's price map %s could not be read (%s): calls counted at $0", path, e)
        return {}
    return data if isinstance(data, dict) else {}


def load_price_map(*, background: bool = False) -> Future[dict[str, Any]]:
    """The process's price map, read once; in a daemon thread if `background`."""
    global _map_future
    with _map_lock:
        future = _map_future
        if future is None:
            future = _map_future = Future()
            start = True
        else:
            start = False
    if start:

        def read() -> None:
            future.set_result(_read_map())

        if background:
            threading.Thread(target=read, name="moscopt-prices", daemon=True).start()
        else:
            read()
    return future


def _note_unpriced(model: str) -> None:
    with _noted_lock:
        if model in _noted:
            return
        _noted.add(model)
    log.warning("no price known for model '%s': its calls are counted at $0", model)


def lookup(table: dict[str, Any], model: str) -> Prices | None:
    """The prices of `model` (a litellm model string) in `table`, or None."""
    provider, _, name = model.partition("/")
    if provider == LOCAL_PROVIDER:
        return FREE
    for key in (model, name) if name else (model,):
        entry = table.get(key)
        if not isinstance(entry, dict):
            continue
        pin = entry.get("input_cost_per_token")
        pout = entry.get("output_cost_per_token")
        if isinstance(pin, int | float) and isinstance(pout, int | float):
            read = entry.get("cache_read_input_token_cost")
            write = entry.get("cache_creation_input_token_cost")
            return Prices(
                float(pin),
                float(pout),
                float(read) if isinstance(read, int | float) else None,
                float(write) if isinstance(write, int | float) else None,
            )
    return None


class Pricing:
    """Per-token prices by model string, looked up once per model and kept."""

    def __init__(self) -> None:
        self._prices: dict[str, Prices | None] = {}
        self._lock = threading.Lock()

    @staticmethod
    def prefetch() -> None:
        """Start reading the price map in the background (returns at once)."""
        load_price_map(background=True)

    def prices(self, model: str) -> Prices | None:
        """The model's prices, or None when it is not priced."""
        with self._lock:
            if model in self._prices:
                return self._prices[model]
        if model.partition("/")[0] == LOCAL_PROVIDER:
            found: Prices | None = FREE  # no need to read the map for the embedded model
        else:
            found = lookup(load_price_map().result(), model)
        with self._lock:
            self._prices.setdefault(model, found)
        if found is None:
            _note_unpriced(model)
        return found

    def known(self, model: str) -> bool:
        return self.prices(model) is not None

    def cost(
        self, model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0
    ) -> float:
        """USD for a call; `cached_tokens` of the prompt are billed at the cache-read price."""
        p = self.prices(model)
        if p is None:
            return 0.0
        cached = min(max(cached_tokens, 0), prompt_tokens)
        read = p.input if p.cache_read is None else p.cache_read
        return (prompt_tokens - cached) * p.input + cached * read + completion_tokens * p.output

    def saving(self, model: str, cached_tokens: int) -> float:
        """USD saved by `cached_tokens` prompt tokens read from the provider's prompt cache."""
        p = self.prices(model)
        if p is None or p.cache_read is None or cached_tokens <= 0:
            return 0.0
        return cached_tokens * max(p.input - p.cache_read, 0.0)

    def bound(self, model: str, prompt_chars: int, max_tokens: int) -> float:
        """An upper bound on a call's cost: ~3 characters per prompt token, full `max_tokens`."""
        return self.cost(model, prompt_chars // 3 + 1, max_tokens)
