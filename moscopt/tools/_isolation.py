"""What the host offers for isolating a sandboxed process, and the pieces that depend on it.

- `scrubbed_environment`: the child's environment, built from an allow-list.
- `namespace_prefix`: the ``unshare`` command that puts the child in fresh network and PID
  namespaces, or ``[]`` where that does not work (probed once per process and remembered:
  a fact about the host, not mutable state).
- `sandbox_identity`: the uid/gid to drop to (root only): a random unprivileged id per run, so
  that RLIMIT_NPROC counts this run's processes only and concurrent runs cannot signal or read
  each other.
- `kill_processes_of`: the fallback sweep for processes that left the process group when no PID
  namespace contains them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping

# Variables the child may inherit. Everything else (API keys, tokens, cloud credentials, proxies,
# PYTHON* settings, ...) is dropped.
_ALLOWED_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "PYTHONHASHSEED", "TERM"})
_ALLOWED_PREFIXES = ("LC_",)
_FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"

# Random sandbox ids come from a range that distributions do not hand out to real accounts.
_ID_BASE = 1_900_000_000
_ID_SPAN = 100_000_000


def scrubbed_environment(parent: Mapping[str, str], workdir: str) -> dict[str, str]:
    """The child's environment: allow-listed variables only, HOME and TMPDIR in the work dir."""
    env = {
        name: value
        for name, value in parent.items()
        if name in _ALLOWED_NAMES or name.startswith(_ALLOWED_PREFIXES)
    }
    env.setdefault("PATH", _FALLBACK_PATH)
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONDONTWRITEBYTECODE="1")
    return env


def is_root() -> bool:
    return os.geteuid() == 0


def sandbox_identity() -> tuple[int, int] | None:
    """(uid, gid) to run as, or None when not root (an unprivileged user cannot switch)."""
    if not is_root():
        return None
    ident = _ID_BASE + secrets.randbelow(_ID_SPAN)
    return ident, ident


def home_directories() -> list[str]:
    """The launching user's home directories (read access is refused there by the audit hook)."""
    homes = {os.path.expanduser("~")}
    with contextlib.suppress(KeyError):
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted(os.path.realpath(h) for h in homes if h and h != "/")


@functools.cache
def namespace_prefix() -> tuple[str, ...]:
    """The ``unshare`` command prefix that works here, or ``()``.

    Root gets new network and PID namespaces directly; other users get them inside a new user
    namespace that maps only their own uid (no added privilege). The probe runs the real
    interpreter under the prefix once; any failure means no namespaces.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    common = ("--net", "--pid", "--fork", "--kill-child")
    prefix = (
        (unshare, *common, "--")
        if is_root()
        else (unshare, "--user", "--map-current-user", *common, "--")
    )
    probe = "import os, socket; assert os.getpid() == 1; socket.create_connection(('1.1.1.1', 53))"
    try:
        result = subprocess.run(
            [*prefix, sys.executable, "-I", "-S", "-c", probe],
            capture_output=True,
            timeout=10,
            env={"PATH": os.environ.get("PATH", _FALLBACK_PATH)},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    # The probe must have started as PID 1 and then failed to reach the network.
    unreachable = b"OSError" in result.stderr or b"unreachable" in result.stderr
    return prefix if result.returncode == 1 and unreachable else ()


def kill_processes_of(uid: int) -> int:
    """SIGKILL every process whose real uid is ``uid``; returns how many were signalled."""
    killed = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as handle:
                status = handle.read()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith(b"Uid:"):
                if int(line.split()[1]) == uid:
                    with contextlib.suppress(OSError):
                        os.kill(int(entry), signal.SIGKILL)
                        killed += 1
                break
    return killed
