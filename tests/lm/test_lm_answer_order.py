"""After an answer, the request waiting for the freed slot goes out before the answer's own
bookkeeping (its event, its cache entry); a call made is recorded even when its caller is
cancelled meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from moscopt.config import LLMConfig
from moscopt.lm.cache import ResponseCache
from moscopt.lm.client import LiteLLMClient
from moscopt.lm.wire import LMRequest, RawAnswer


class OrderTransport:
    """Answers at once; writes "send <prompt>" into the shared order as each request goes out."""

    def __init__(self, order: list[str]) -> None:
        self.order = order

    async def asend(self, request: LMRequest) -> RawAnswer:
        self.order.append(f"send {request.messages[-1]['content']}")
        await asyncio.sleep(0)
        return RawAnswer(f"echo: {request.messages[-1]['content']}", 5, 2)

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None


def client(order: list[str], tmp_path: Path) -> LiteLLMClient:
    def event(e: dict[str, Any]) -> None:
        order.append(f"event {e.get('purpose')}")

    return LiteLLMClient(
        "openai/m",
        llm=LLMConfig(concurrency=1),
        transport=OrderTransport(order),  # type: ignore[arg-type]
        cache=ResponseCache(tmp_path / "c"),
        events=event,
    )


def test_the_next_request_goes_out_before_the_answers_bookkeeping(tmp_path: Path) -> None:
    order: list[str] = []
    lm = client(order, tmp_path)

    async def both() -> None:
        await asyncio.gather(
            lm.acomplete([{"role": "user", "content": "a"}], purpose="first"),
            lm.acomplete([{"role": "user", "content": "b"}], purpose="second"),
        )

    asyncio.run(both())
    assert order.index("send b") < order.index("event first")
    assert [o for o in order if o.startswith("event")] == ["event first", "event second"]
    lm.close()


def test_a_call_made_is_recorded_when_its_caller_is_cancelled_at_the_answer(
    tmp_path: Path,
) -> None:
    order: list[str] = []
    lm = client(order, tmp_path)

    async def cancelled_at_the_answer() -> None:
        call = asyncio.ensure_future(lm.acomplete([{"role": "user", "content": "a"}]))
        while "send a" not in order:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # the answer is back: the call yields once before its bookkeeping
        call.cancel()
        await asyncio.gather(call, return_exceptions=True)
        assert call.cancelled()

    asyncio.run(cancelled_at_the_answer())
    assert lm.stats.calls == 1 and lm.budget.calls == 1  # counted and settled
    lm.close()
