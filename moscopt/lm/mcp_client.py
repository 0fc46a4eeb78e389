"""`mcp/client`: moscopt's calls answered by the model of the MCP client that runs moscopt, through
MCP sampling (`sampling/createMessage`): no API key where the agent already has a model.

`SamplingTransport` is a transport like the others (`moscopt.lm.transport`): the `LiteLLMClient`
around it retries, caches, counts and budgets its calls as any model's. It hands each request
to the `Sampler` that `moscopt mcp` registers with `register` while a client is connected
(`moscopt.mcp.sampling`); without one, the model cannot be used and says why. The client's
model has no price moscopt knows: a call costs 0, so a run needs `max_calls`. Its token counts
are not reported by the protocol: they are estimated at four characters a token.
"""

from __future__ import annotations

import json
import threading
from typing import Protocol

from moscopt.lm.base import LMRequest
from moscopt.lm.errors import LMSetupError
from moscopt.lm.retry import Fault
from moscopt.lm.wire import RawAnswer

PROVIDER = "mcp"
MODEL = "mcp/client"
NO_SAMPLER = (
    "model 'mcp/client' is the model of the MCP client running moscopt: use it from `moscopt "
    "mcp`, with a client that supports sampling (sampling/createMessage)"
)


class Sampler(Protocol):
    """Asks the connected client's model; raises `Fault` for a refused or failed request."""

    async def sample(
        self, system: str, messages: list[tuple[str, str]], *, temperature: float, max_tokens: int
    ) -> tuple[str, str | None]:
        """(the answer's text, its stop reason) for `messages` ((role, text) pairs)."""
        ...

    def available(self) -> str | None:
        """None when sampling can be asked now, else why not."""
        ...


_sampler: Sampler | None = None
_lock = threading.Lock()


def register(sampler: Sampler | None) -> None:
    global _sampler
    with _lock:
        _sampler = sampler


def check_sampler() -> None:
    """`LMSetupError` (exit 2) unless a connected client can answer now."""
    with _lock:
        sampler = _sampler
    if sampler is None:
        raise LMSetupError(NO_SAMPLER, field="model")
    why = sampler.available()
    if why is not None:
        raise LMSetupError(f"model 'mcp/client': {why}", field="model")


def schema_instruction(schema: object) -> str:
    """What a structured request asks of a model that takes no response format."""
    return (
        "Reply with one JSON document and nothing else (no code fence) that matches this JSON "
        f"schema:\n{json.dumps(schema, sort_keys=True)}"
    )


class SamplingTransport:
    """One attempt at one request, through the registered `Sampler`."""

    async def asend(self, request: LMRequest) -> RawAnswer:
        with _lock:
            sampler = _sampler
        if sampler is None:
            raise Fault("not_found", NO_SAMPLER)
        system = [m["content"] for m in request.messages if m["role"] == "system"]
        if request.schema is not None:
            system.append(schema_instruction(request.schema))
        turns: list[tuple[str, str]] = [
            (m["role"], m["content"]) for m in request.messages if m["role"] != "system"
        ]
        text, stop = await sampler.sample(
            "\n\n".join(system),
            turns,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
        )
        chars = sum(len(m["content"]) for m in request.messages)
        return RawAnswer(
            text=text,
            prompt_tokens=chars // 4,
            completion_tokens=len(text) // 4,
            finish_reason="length" if stop == "maxTokens" else "stop",
            cost=0.0,
        )

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None
