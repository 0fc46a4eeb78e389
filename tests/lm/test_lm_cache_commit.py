"""The response cache's group commit: answers put on an event loop are written together when the
loop turns (`ResponseCache.commit`), found by `get` meanwhile, and never lost by a process killed
after that turn (kill points chosen by progress: the n-th answer)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from moscopt.config import LLMConfig
from moscopt.lm import LiteLLMClient
from moscopt.lm.base import Completion
from moscopt.lm.cache import ResponseCache, _Folder
from moscopt.testing import FakeServer

REPO = Path(__file__).resolve().parents[2]


def stored(directory: Path) -> int:
    """Entries committed to the folder, as another process would see them."""
    other = ResponseCache(directory)
    try:
        return len(other)
    finally:
        other.close()


def test_answers_of_one_turn_are_committed_together_when_the_loop_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResponseCache(tmp_path)
    batches: list[list[str]] = []
    write = _Folder.set_many

    def recorded(self: _Folder, entries: dict[str, str]) -> bool:
        batches.append(sorted(entries))
        return write(self, entries)

    monkeypatch.setattr(_Folder, "set_many", recorded)

    async def main() -> tuple[int, int, str | None]:
        for key in ("a", "b", "c"):
            cache.put(key, Completion(text=f"answer {key}", model="m"))
        found = cache.get("b")  # found before it is written
        before = stored(tmp_path)
        await asyncio.sleep(0)  # the loop turns
        return before, stored(tmp_path), found.text if found else None

    before, after, found = asyncio.run(main())
    assert (before, after, found) == (0, 3, "answer b")
    assert batches == [["a", "b", "c"]]  # one transaction
    cache.close()


def test_without_a_loop_a_put_is_committed_at_once(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k", Completion(text="now", model="m"))
    assert stored(tmp_path) == 1
    cache.close()


def test_close_commits_what_the_loop_did_not(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)

    async def main() -> None:
        cache.put("k", Completion(text="late", model="m"))
        cache.close()  # before the loop turns

    asyncio.run(main())
    assert stored(tmp_path) == 1
    got = ResponseCache(tmp_path).get("k")
    assert got is not None and got.text == "late"


def test_a_discarded_answer_is_not_written_later(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)

    async def main() -> None:
        cache.put("k", Completion(text="bad", model="m"))
        cache.discard("k")
        await asyncio.sleep(0)

    asyncio.run(main())
    assert "k" not in cache and stored(tmp_path) == 0


def test_a_blocking_call_returns_with_its_answer_committed(tmp_path: Path) -> None:
    with FakeServer() as server:
        lm = LiteLLMClient(
            "openai/fake",
            api_base=server.url,
            api_key="k",
            cache=ResponseCache(tmp_path),
            llm=LLMConfig(max_retries=0),
        )
        lm.complete([{"role": "user", "content": "hi"}])
        assert stored(tmp_path) == 1  # not waiting for the loop thread's next turn
        lm.close()


CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from moscopt.config import LLMConfig
    from moscopt.lm import LiteLLMClient
    from moscopt.lm.cache import ResponseCache

    url, folder, kill_after, turn = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

    async def main():
        lm = LiteLLMClient("openai/fake", api_base=url, api_key="k",
                           cache=ResponseCache(folder), llm=LLMConfig(max_retries=0))
        for i in range(10):
            await lm.acomplete([{"role": "user", "content": f"question {i}"}])
            if i + 1 == kill_after:
                if turn == "turned":
                    await asyncio.sleep(0)
                os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kill_after", [1, 4])
@pytest.mark.parametrize("turn", ["turned", "same turn"])
def test_a_process_killed_after_an_answer_keeps_every_answer_but_that_turns(
    tmp_path: Path, kill_after: int, turn: str
) -> None:
    """Killed once the loop turned after the n-th answer: all n are kept. Killed in the very turn
    that received it: the answers before it are kept (the promise of `ResponseCache.commit`)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with FakeServer() as server:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.url, str(tmp_path), str(kill_after), turn],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == -signal.SIGKILL, done.stderr
        assert server.count() == kill_after  # the kill came by progress
    kept = stored(tmp_path)
    if turn == "turned":
        assert kept == kill_after
    else:
        assert kept in (kill_after - 1, kill_after)  # at most that turn's answer is lost
