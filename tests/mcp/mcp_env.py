"""A `moscopt mcp` process and the MCP SDK's own client, driven from synchronous tests.

The client lives in an event loop on a thread of its own (`Session`); each call is submitted to
that loop and waited for. The loopback server (`FakeServer`) runs in the test process.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")
Progress = list[tuple[float, float | None, str | None]]


def scripted_train_args(url: str) -> dict[str, Any]:
    """`train`'s arguments for the `write_project` world at `url` (as `train_argv`, no budget)."""
    return {
        "benchmark": "addition.yaml", "model": "openai/scripted", "api_base": url,
        "data": "addition.jsonl", "n": 3, "k": 2, "epochs": 1, "steps_per_epoch": 1,
        "no_evolution": True,
    }  # fmt: skip


def server_params(root: Path, **env: str) -> StdioServerParameters:
    keep = ("HOME", "MOSCOPT_HOME", "XDG_CACHE_HOME", "PATH", "OPENAI_API_KEY", "MOSCOPT_CACHE_DIR")
    environ = {k: os.environ[k] for k in keep if k in os.environ}
    environ["PYTHONPATH"] = str(REPO)
    environ.update(env)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "moscopt", "mcp"], cwd=str(root), env=environ
    )


class Session:
    """An open MCP client session with `moscopt mcp`; `url` is the loopback server's."""

    def __init__(self, params: StdioServerParameters, url: str, **client: Any) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.client: Any = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(params, client), daemon=True)
        self.thread.start()
        self.ready.wait(60)
        if self._error is not None:
            raise self._error
        assert self.client is not None, "the MCP client did not connect"

    def _run(self, params: StdioServerParameters, client: dict[str, Any]) -> None:
        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                async with Client(params, mode="legacy", **client) as c:
                    self.client = c
                    self.ready.set()
                    await self._stop.wait()
            except BaseException as e:
                self._error = e
                self.ready.set()

        self.loop.run_until_complete(main())

    def call(self, coro: Awaitable[T], timeout: float = 180) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def raw(self, name: str, args: dict[str, Any], progress: Progress | None = None) -> Any:
        callback: Callable[..., Awaitable[None]] | None = None
        if progress is not None:

            async def record(value: float, total: float | None, message: str | None) -> None:
                progress.append((value, total, message))

            callback = record
        return self.call(self.client.call_tool(name, args, progress_callback=callback))

    def tool(self, name: str, args: dict[str, Any], progress: Progress | None = None) -> Any:
        result = self.raw(name, args, progress)
        assert not result.is_error, result.content[0].text
        return json.loads(result.content[0].text)

    def error(self, name: str, args: dict[str, Any]) -> str:
        result = self.raw(name, args)
        assert result.is_error, result.content
        return str(result.content[0].text)

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)
