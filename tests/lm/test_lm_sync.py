"""The one sync wrapper: the async core run on a private loop thread."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Any, ClassVar

import pytest

from moscopt.lm.sync import LoopThread
from moscopt.testing import FakeServer


def test_sync_calls_work_inside_a_running_loop(make_client: Any, server: FakeServer) -> None:
    lm = make_client()

    async def caller() -> str:
        return lm.complete([{"role": "user", "content": "from async code"}]).text

    assert asyncio.run(caller()) == "echo: from async code"


def test_errors_come_back_with_their_type() -> None:
    runner = LoopThread()

    async def fails() -> None:
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        runner.run(fails())
    runner.close()


def test_close_runs_the_cleanup_and_cancels_what_was_left_running() -> None:
    runner = LoopThread()
    seen: list[str] = []

    async def leave_a_task() -> None:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)

    async def cleanup() -> None:
        seen.append("cleanup")

    runner.run(leave_a_task())
    thread = runner._thread
    runner.close(cleanup)
    assert seen == ["cleanup", "cancelled"]
    assert thread is not None and not thread.is_alive()
    runner.close()  # twice is harmless


def test_a_runner_never_closed_ends_its_thread_when_collected() -> None:
    runner = LoopThread()

    async def noop() -> int:
        return 1

    assert runner.run(noop()) == 1
    thread = runner._thread
    del runner
    gc.collect()
    assert thread is not None
    thread.join(timeout=5)
    assert not thread.is_alive()


class _DroppedClient:
    """Like an SDK client litellm built and dropped: a reference cycle (only the collector
    frees it) whose `__del__` schedules its close on the loop running at that moment."""

    closed_on: ClassVar[list[asyncio.AbstractEventLoop]] = []

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        with contextlib.suppress(RuntimeError):  # no loop running: the SDK then does nothing
            asyncio.get_running_loop().create_task(self.aclose())

    async def aclose(self) -> None:
        _DroppedClient.closed_on.append(asyncio.get_running_loop())


@pytest.mark.parametrize("runner", ["asyncio.run", "LoopThread"])
def test_clients_dropped_on_a_loop_are_closed_on_it_before_it_ends(runner: str) -> None:
    from moscopt.lm.litellm_env import close_dropped_clients_at_loop_end

    _DroppedClient.closed_on = []

    async def use() -> asyncio.AbstractEventLoop:
        await close_dropped_clients_at_loop_end()
        _DroppedClient()
        return asyncio.get_running_loop()

    if runner == "asyncio.run":
        loop = asyncio.run(use())
    else:
        thread = LoopThread()
        loop = thread.run(use())
        thread.close()
    assert _DroppedClient.closed_on == [loop]
