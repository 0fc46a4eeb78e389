"""The one sync wrapper: the async core run on a private loop thread."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

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
