"""Run one command so that nothing it starts outlives it: `python -I reaper.py ARGV...`.

Only the standard library: it runs by path, isolated (`-I`), whatever the agent's environment.

A process group is not enough to end an agent's helpers: a daemon that calls `setsid` leaves
the group, and `killpg` misses it. This wrapper makes itself a child subreaper
(`PR_SET_CHILD_SUBREAPER`, Linux): every process the command starts, however it detaches, is
re-parented to the wrapper when its own parent exits, never to init. When the command exits,
or when the wrapper is asked to stop (SIGTERM, SIGINT, SIGHUP: a timeout), it kills every
descendant it still has (after `STOP_GRACE` seconds for the command itself, when stopped) and
reaps them, then exits with the command's status (128 + signal
for a command ended by a signal, as a shell reports it).

Where the prctl is unavailable (not Linux), the command runs as before: the process group is
still signalled by `moscopt.agent.external.process`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_STOP = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_GRACE = 1.0  # seconds the command has to end after a stop signal (less than the caller's)


def become_subreaper() -> bool:
    """Whether this process is now a child subreaper (False where the OS has none)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """The live children of `pid` (from /proc: each task's `children`, else every stat)."""
    found: list[int] = []
    tasks = Path(f"/proc/{pid}/task")
    try:
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
        return found
    except OSError:
        pass
    try:
        entries = list(Path("/proc").iterdir())  # kernels without the children file
    except OSError:
        return found  # no /proc: nothing to find (the process group is still signalled)
    for entry in entries:
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        if child not in out:
            out.append(child)
            todo += children(child)
    return out


def kill_all(me: int) -> None:
    """SIGKILL every descendant of `me` and reap them, until none is left."""
    for _ in range(100):  # a fork bomb cannot keep it busy forever
        alive = descendants(me)
        if not alive:
            return
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        self.signum = signum


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop(signum)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m moscopt.agent.external.reaper COMMAND [ARGS...]", file=sys.stderr)
        return 2
    become_subreaper()
    me = os.getpid()
    try:
        proc = subprocess.Popen(argv)
    except OSError as e:
        print(f"could not start the agent: {e}", file=sys.stderr)
        return 127

    for sig in _STOP:
        signal.signal(sig, _raise_stop)
    try:
        code = proc.wait()
    except _Stop as stop:  # asked to end (a timeout): the command gets a moment, then all go
        for sig in _STOP:
            signal.signal(sig, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(stop.signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_GRACE)
        kill_all(me)
        return 128 + stop.signum
    kill_all(me)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
