"""`InFlight`: one cap on requests in flight across threads and event loops (a study's runs)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from moscopt.config import LLMConfig
from moscopt.lm.client import LiteLLMClient
from moscopt.lm.inflight import InFlight, Stopped, sharing
from moscopt.testing import FakeServer


def run_threads(count: int, body: object) -> list[BaseException]:
    """Run `body()` (a coroutine function) on `count` threads, each with its own loop."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(body())  # type: ignore[operator]
        except BaseException as e:  # reported to the test
            errors.append(e)

    threads = [threading.Thread(target=target) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return errors


def test_many_loops_on_many_threads_never_exceed_the_cap_and_all_finish() -> None:
    cap = InFlight(3)
    seen: list[int] = []
    lock = threading.Lock()
    in_flight = 0
    lanes = [cap.lane() for _ in range(5)]

    async def request(lane_index: int) -> None:
        nonlocal in_flight
        async with lanes[lane_index].slot():
            with lock:
                in_flight += 1
                seen.append(in_flight)
            await asyncio.sleep(0.001)
            with lock:
                in_flight -= 1

    index = iter(range(5))

    async def body() -> None:
        i = next(index)
        await asyncio.gather(*(request(i) for _ in range(20)))

    assert run_threads(5, body) == []
    assert max(seen) == 3 == cap.peak  # the cap was reached and held
    assert cap.sent == 100 and cap.busy == 0
    assert [lane.sent for lane in lanes] == [20] * 5  # each lane counts its own requests


def test_a_cancelled_waiter_passes_its_wake_on() -> None:
    async def main() -> None:
        cap = InFlight(1)
        order: list[str] = []

        async def user(name: str, hold: float) -> None:
            async with cap.slot():
                order.append(name)
                await asyncio.sleep(hold)

        first = asyncio.ensure_future(user("a", 0.01))
        await asyncio.sleep(0)
        doomed = asyncio.ensure_future(user("b", 0))
        last = asyncio.ensure_future(user("c", 0))
        await asyncio.sleep(0)
        doomed.cancel()
        await asyncio.wait_for(asyncio.gather(first, last), timeout=10)
        assert order == ["a", "c"] and cap.busy == 0

    asyncio.run(main())


def test_closing_stops_every_waiter_and_every_later_request() -> None:
    async def main() -> None:
        cap = InFlight(1)
        holder = asyncio.Event()

        async def hold() -> None:
            async with cap.slot():
                await holder.wait()

        async def wait() -> None:
            async with cap.slot():
                pass

        held = asyncio.ensure_future(hold())
        await asyncio.sleep(0)
        waiting = asyncio.ensure_future(wait())
        await asyncio.sleep(0)
        cap.close("interrupted")
        with pytest.raises(Stopped, match="interrupted"):
            await waiting
        with pytest.raises(Stopped):
            await wait()
        holder.set()
        await held  # what was in flight finishes normally

    asyncio.run(main())


def test_clients_made_inside_sharing_take_their_slots_from_the_one_cap() -> None:
    """Four clients on four threads, each allowed 4 at once on its own: 2 in flight in all."""
    cap = InFlight(2)
    llm = LLMConfig(concurrency=4, max_retries=0)
    with FakeServer(latency=0.02) as server:

        async def body() -> None:
            with sharing(cap.lane()):
                client = LiteLLMClient("openai/echo", llm=llm, api_base=server.url)
            try:
                await asyncio.gather(
                    *(
                        client.acomplete([{"role": "user", "content": f"q{i}"}], sample=i)
                        for i in range(6)
                    )
                )
            finally:
                await client.aclose()

        assert run_threads(4, body) == []
        assert server.count() == 24
        assert server.max_in_flight == 2 == cap.peak


def test_a_client_made_outside_sharing_keeps_its_own_cap() -> None:
    llm = LLMConfig(concurrency=3, max_retries=0)
    with FakeServer(latency=0.02) as server:
        client = LiteLLMClient("openai/echo", llm=llm, api_base=server.url)

        async def body() -> None:
            await asyncio.gather(
                *(client.acomplete([{"role": "user", "content": f"q{i}"}]) for i in range(9))
            )
            await client.aclose()

        asyncio.run(body())
        assert server.max_in_flight == 3


def test_a_request_its_caller_gave_up_on_keeps_its_slot_until_answered() -> None:
    """Under a study's cap, cancelling a call whose request is on the wire does not free its
    slot for the next request until the server has answered it: the provider never sees more
    than the cap."""
    cap = InFlight(1)
    llm = LLMConfig(concurrency=1, max_retries=0)
    with FakeServer(latency=0.3) as server:

        async def body() -> None:
            with sharing(cap.lane()):
                client = LiteLLMClient("openai/echo", llm=llm, api_base=server.url)
            first = asyncio.ensure_future(client.acomplete([{"role": "user", "content": "a"}]))
            while server.count() < 1:  # until the server has it (progress, not time)
                await asyncio.sleep(0.001)
            first.cancel()
            second = await client.acomplete([{"role": "user", "content": "b"}])
            assert second.text == "echo: b"
            assert first.cancelled()
            await client.aclose()

        asyncio.run(body())
        a, b = server.log
        assert a.seconds >= server.latency  # answered, not abandoned
        assert b.arrived >= a.arrived + a.seconds - 0.01  # sent once the first was answered
        assert server.max_in_flight == 1


def test_a_request_left_when_its_loop_ends_keeps_its_slot_until_answered() -> None:
    """A run that stops (its `asyncio.run` ends, cancelling what is left) with a request on the
    wire: the next run's request waits for that answer (what the provider still holds)."""
    cap = InFlight(1)
    llm = LLMConfig(concurrency=1, max_retries=0)
    with FakeServer(latency=0.3) as server:
        with sharing(cap.lane()):
            first = LiteLLMClient("openai/echo", llm=llm, api_base=server.url)
            second = LiteLLMClient("openai/echo", llm=llm, api_base=server.url)

        async def stops_early() -> None:
            left = asyncio.ensure_future(first.acomplete([{"role": "user", "content": "a"}]))
            while server.count() < 1:  # until the server has it (progress, not time)
                await asyncio.sleep(0.001)
            assert not left.done()  # returning ends the loop: asyncio.run cancels the call

        asyncio.run(stops_early())
        assert second.complete([{"role": "user", "content": "b"}]).text == "echo: b"
        first.close()
        second.close()
        a, b = server.log
        assert a.seconds >= server.latency  # answered, not abandoned
        assert b.arrived >= a.arrived + a.seconds - 0.01
        assert server.max_in_flight == 1
