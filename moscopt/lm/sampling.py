"""Several samples of one request."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from moscopt.lm.base import LM, Completion, Message


async def acomplete_samples(
    lm: LM,
    messages: Sequence[Message],
    n: int,
    *,
    start: int = 0,
    schema: Mapping[str, Any] | None = None,
    purpose: str = "",
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
) -> list[Completion]:
    """Samples `start .. start+n-1` of one request, concurrently, in sample order.

    Each sample index is its own cache entry, so asking again for the same indices makes no
    call. Errors propagate as from `LM.acomplete` (the first one raised wins).
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    return list(
        await asyncio.gather(
            *(
                lm.acomplete(
                    messages,
                    schema=schema,
                    sample=start + i,
                    purpose=purpose,
                    temperature=temperature,
                    top_p=top_p,
                    max_tokens=max_tokens,
                )
                for i in range(n)
            )
        )
    )
