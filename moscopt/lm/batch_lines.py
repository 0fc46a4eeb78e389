"""The files of a provider batch: the input (one OpenAI chat request per line, its cache key as
`custom_id`), the output (answered lines by custom id), and the price of a batched answer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from moscopt.core.jsonio import loads
from moscopt.lm.base import LMRequest
from moscopt.lm.wire import chat_body, dumps

ENDPOINT = "/v1/chat/completions"


def input_file(requests: Sequence[LMRequest], wire_model: str) -> bytes:
    """The JSONL input of a batch: each request's chat body under its cache key."""
    lines = [
        dumps({"custom_id": r.key(), "method": "POST", "url": ENDPOINT,
               "body": chat_body(r, wire_model)})
        for r in requests
    ]  # fmt: skip
    return b"\n".join(lines) + b"\n"


def output_bodies(data: bytes) -> dict[str, dict[str, Any]]:
    """The chat completions of an output file's answered lines (status 200), by custom id;
    lines that are errors or unreadable are left out (their requests are not answered)."""
    out: dict[str, dict[str, Any]] = {}
    for raw in data.splitlines():
        try:
            line = loads(raw)
        except ValueError:
            continue
        response = line.get("response") if isinstance(line, dict) else None
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if (
            isinstance(response, dict)
            and response.get("status_code") == 200
            and isinstance(custom_id, str)
            and isinstance(response.get("body"), dict)
        ):
            out[custom_id] = response["body"]
    return out


async def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD at the provider's batch price (litellm's price map: `*_cost_per_token_batches`);
    None when the map has no batch price for `model` (then it is priced as any call)."""
    from moscopt.lm.pricing import load_price_map

    table = await asyncio.wrap_future(load_price_map(background=True))
    name = model.partition("/")[2]
    for key in (model, name):
        entry = table.get(key)
        if isinstance(entry, dict):
            pin = entry.get("input_cost_per_token_batches")
            pout = entry.get("output_cost_per_token_batches")
            if isinstance(pin, int | float) and isinstance(pout, int | float):
                return prompt_tokens * float(pin) + completion_tokens * float(pout)
    return None
