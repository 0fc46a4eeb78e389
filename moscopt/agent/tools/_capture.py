"""Watch a sandboxed child: read its output with bounded memory, enforce the wall clock and the
work dir's disk bound, kill.

`watch` runs in the calling thread (no helper threads), so many runs can proceed at once from
many threads. Memory per run is bounded by ``keep_bytes`` per stream plus one read chunk.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from moscopt.agent.tools._workdir import DISK_LIMIT, disk_usage

_CHUNK = 65536
# How often a run whose pipes are still open re-checks whether its main process has exited
# (a grandchild may hold the pipes open after the main process is gone).
_POLL_SECONDS = 0.05
# After the main process exits, how long its pipes may take to reach end-of-file.
_DRAIN_GRACE_SECONDS = 0.2
# How long the group's other members may take to die after the SIGKILL.
_GROUP_EXIT_SECONDS = 2.0


@dataclass
class StreamBuffer:
    """The first ``keep_bytes`` bytes of a stream and the total number of bytes seen."""

    keep_bytes: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        room = self.keep_bytes - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.total += len(chunk)


@dataclass
class Watched:
    """What happened to the child, as seen by the parent."""

    stdout: StreamBuffer
    stderr: StreamBuffer
    returncode: int
    timed_out: bool
    output_limit_hit: bool
    status: list[tuple[str, str]]
    disk_limit_hit: bool = False

    @property
    def limit(self) -> str | None:
        """The bound the child was killed at (its ``killed_reason``), if any."""
        if self.disk_limit_hit:
            return "disk-limit"
        return "output-limit" if self.output_limit_hit else None


def _exited_unreaped(pid: int) -> bool:
    """True once ``pid`` has exited; it stays a zombie, so its pid (and group id) is not reused."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _terminate(proc: subprocess.Popen[bytes], pid_namespace: bool) -> int:
    """Kill whatever is left of the child's process tree and reap the child; its return code."""
    if pid_namespace and not _exited_unreaped(proc.pid):
        for child in _children(proc.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + _GROUP_EXIT_SECONDS
        while not _exited_unreaped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
    # Kill the group before reaping the leader, while its id cannot have been reused.
    kill_group(proc.pid)
    returncode = proc.wait()
    _wait_until_group_gone(proc.pid)
    return returncode


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        return []


def _wait_until_group_gone(pgid: int) -> None:
    """Wait (bounded) until no process of the group is left, e.g. a PID-namespace init that is
    still killing the namespace's processes; those are gone once it is."""
    deadline = time.monotonic() + _GROUP_EXIT_SECONDS
    delay = 0.0005
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def watch(
    proc: subprocess.Popen[bytes],
    status_fd: int,
    *,
    timeout: float,
    keep_bytes: int,
    kill_after_bytes: int,
    pid_namespace: bool,
    work_dir: Path | None = None,
    disk_bytes: int = DISK_LIMIT,
) -> Watched:
    """Read stdout, stderr and the status pipe until the child is done; kill it when due.

    The child (a session leader: started with ``start_new_session=True``) and its whole process
    group are SIGKILLed on timeout, when either stream passes ``kill_after_bytes``, and in any
    case once the main process has exited (leftover background processes). The child is reaped
    before returning; ``status_fd`` and the child's pipes are closed.

    ``pid_namespace`` says the child is ``unshare --pid --fork``: then the namespace's init (its
    only child) is killed first, so that unshare reaps it — killing unshare too would leave the
    init to the host's PID 1, which may be slow to reap.

    With ``work_dir``, what the tree under it occupies is measured every `_POLL_SECONDS`, and the
    child killed once it passes ``disk_bytes`` (`disk_limit_hit`; see `_workdir.disk_usage`), or
    when part of the tree is unreadable at two measures in a row: code that makes a directory
    unreadable as it ends (a test of its own cleanup) is not killed for it, and a directory
    kept unreadable to hide what it holds is (whenever it is readable, all of it is counted).
    """
    assert proc.stdout is not None and proc.stderr is not None
    out, err = StreamBuffer(keep_bytes), StreamBuffer(keep_bytes)
    buffers = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    status_raw = bytearray()
    timed_out = output_limit_hit = disk_limit_hit = False
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    measured = 0.0
    unreadable = 0  # measures in a row that could not read the whole tree
    with selectors.DefaultSelector() as selector:
        for fd in (*buffers, status_fd):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = exited_at is None
                break
            if exited_at is None and _exited_unreaped(proc.pid):
                exited_at = now
            if exited_at is not None and now - exited_at > _DRAIN_GRACE_SECONDS:
                break
            if work_dir is not None and exited_at is None and now - measured >= _POLL_SECONDS:
                used, measured = disk_usage(work_dir, disk_bytes), now
                unreadable = unreadable + 1 if used is None else 0
                if unreadable >= 2 or (used is not None and used > disk_bytes):
                    disk_limit_hit = True
                    break
            for key, _ in selector.select(min(deadline - now, _POLL_SECONDS)):
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                elif fd == status_fd:
                    if len(status_raw) < _CHUNK:
                        status_raw += chunk
                else:
                    buffers[fd].feed(chunk)
                    if buffers[fd].total > kill_after_bytes:
                        output_limit_hit = True
            if output_limit_hit:
                break
    returncode = _terminate(proc, pid_namespace)
    proc.stdout.close()
    proc.stderr.close()
    os.close(status_fd)
    return Watched(
        stdout=out,
        stderr=err,
        returncode=returncode,
        timed_out=timed_out,
        output_limit_hit=output_limit_hit,
        status=_parse_status(bytes(status_raw)),
        disk_limit_hit=disk_limit_hit,
    )


def _parse_status(raw: bytes) -> list[tuple[str, str]]:
    """``KEY<TAB>VALUE`` lines (see `moscopt.agent.tools._bootstrap`), in order; bad lines
    skipped."""
    messages: list[tuple[str, str]] = []
    # split("\n"), not splitlines(): the values may contain \r, \x1e, \u2028 and the like.
    for line in raw.decode("utf-8", errors="replace").split("\n"):
        key, tab, value = line.partition("\t")
        if tab:
            messages.append((key, _unescape(value)))
    return messages


def _unescape(value: str) -> str:
    out: list[str] = []
    chars = iter(value)
    for char in chars:
        if char == "\\":
            nxt = next(chars, "")
            out.append("\n" if nxt == "n" else nxt)
        else:
            out.append(char)
    return "".join(out)
