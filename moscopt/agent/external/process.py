"""Run one external-agent process: bounded output, a wall-clock timeout, its whole group killed.

The process starts in its own session (process group) under `moscopt.agent.external.reaper`, which
kills whatever the command started when it ends, even a daemon that left the group with
`setsid`; on timeout the group gets SIGTERM, then SIGKILL after `GRACE` seconds, so helpers the
agent spawned do not outlive the task. stdout and
stderr are read as they come (a chatty agent never blocks on a full pipe) and only their last
`limit` bytes are kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GRACE = 2.0  # seconds between SIGTERM and SIGKILL on timeout
LIMIT = 64 * 1024  # bytes of stdout (and of stderr) kept
_CHUNK = 65536
REAPER = str(Path(__file__).with_name("reaper.py"))


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None  # None: killed on timeout
    stdout: str
    stderr: str
    timed_out: bool
    elapsed: float
    truncated: bool = False  # output beyond `limit` was dropped (the head)


class _Tail:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]
            self.dropped = True

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _drain(stream: asyncio.StreamReader | None, tail: _Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_CHUNK):
        tail.add(chunk)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: str | None,
    timeout: float,
    env: Mapping[str, str] | None = None,
    limit: int = LIMIT,
    reap: bool = True,
) -> ProcessResult:
    """Run `argv` in `cwd`, `stdin` written to it (None: no stdin); never raises for what the
    process does (a missing program is `FileNotFoundError`, or under the reaper exit status
    127 with the reason on stderr; it is checked before training starts). `reap`: run under
    `moscopt.agent.external.reaper` (Linux), so that nothing it starts outlives it."""
    start = time.monotonic()
    if reap and sys.platform.startswith("linux"):
        argv = [sys.executable, "-I", REAPER, *argv]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    out, err = _Tail(limit), _Tail(limit)
    readers = asyncio.gather(_drain(proc.stdout, out), _drain(proc.stderr, err))

    async def feed() -> None:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin.encode("utf-8"))
                await proc.stdin.drain()
            proc.stdin.close()

    timed_out = False
    try:
        await asyncio.wait_for(asyncio.gather(feed(), proc.wait()), timeout)
    except TimeoutError:
        timed_out = True
        await _kill_group(proc)
    except BaseException:  # cancelled (the run stops): never leave the agent running
        await _kill_group(proc)
        raise
    finally:
        # the group may hold the pipes open after the leader exits: end it, then stop reading
        _signal_group(proc, signal.SIGKILL)
        try:
            await asyncio.wait_for(readers, GRACE)
        except TimeoutError:
            readers.cancel()
    return ProcessResult(
        returncode=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        elapsed=time.monotonic() - start,
        truncated=out.dropped or err.dropped,
    )


def _signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    _signal_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), GRACE)
    except TimeoutError:
        _signal_group(proc, signal.SIGKILL)
        await proc.wait()
