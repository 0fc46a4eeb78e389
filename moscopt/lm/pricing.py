"""Cost of a call from litellm's local cost map (never fetched from the network).

Prices are looked up once per model and kept. A model the map does not know costs 0, and a
warning says so once per model; the embedded model is free and says nothing.
"""

from __future__ import annotations

import logging
import threading

from moscopt.lm.litellm_env import litellm
from moscopt.lm.local import PROVIDER as LOCAL_PROVIDER

log = logging.getLogger("moscopt.lm")
_noted_lock = threading.Lock()
_noted: set[str] = set()  # unpriced models already warned about in this process


def _note_unpriced(model: str) -> None:
    with _noted_lock:
        if model in _noted:
            return
        _noted.add(model)
    log.warning("no price known for model '%s': its calls are counted at $0", model)


class Pricing:
    """Per-token prices by model string, from litellm's bundled cost map."""

    def __init__(self) -> None:
        self._prices: dict[str, tuple[float, float] | None] = {}
        self._lock = threading.Lock()

    def prices(self, model: str) -> tuple[float, float] | None:
        """(input, output) USD per token, or None when the model is not priced."""
        with self._lock:
            if model in self._prices:
                return self._prices[model]
        found = self._lookup(model)
        with self._lock:
            self._prices.setdefault(model, found)
        if found is None:
            _note_unpriced(model)
        return found

    def known(self, model: str) -> bool:
        return self.prices(model) is not None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        p = self.prices(model)
        if p is None:
            return 0.0
        return prompt_tokens * p[0] + completion_tokens * p[1]

    def bound(self, model: str, prompt_chars: int, max_tokens: int) -> float:
        """An upper bound on a call's cost: ~3 characters per prompt token, full `max_tokens`."""
        return self.cost(model, prompt_chars // 3 + 1, max_tokens)

    @staticmethod
    def _lookup(model: str) -> tuple[float, float] | None:
        provider, _, name = model.partition("/")
        if provider == LOCAL_PROVIDER:
            return (0.0, 0.0)
        table = litellm().model_cost
        for key in (model, name) if name else (model,):
            entry = table.get(key)
            if isinstance(entry, dict):
                pin = entry.get("input_cost_per_token")
                pout = entry.get("output_cost_per_token")
                if isinstance(pin, int | float) and isinstance(pout, int | float):
                    return (float(pin), float(pout))
        return None
