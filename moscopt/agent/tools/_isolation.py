"""What the host offers for isolating a sandboxed process, and the pieces that depend on it.

- `scrubbed_environment`: the child's environment, built from an allow-list.
- `namespace_prefix`: the ``unshare`` command that puts the child in fresh network and PID
  namespaces, or ``[]`` where that does not work (probed once per process and remembered:
  a fact about the host, not mutable state).
- `sandbox_identity`: the uid/gid to drop to (root only): a random unprivileged id per run, so
  that RLIMIT_NPROC counts this run's processes only and concurrent runs cannot signal or read
  each other.
- `interpreter_paths`, `read_paths`: what the child may read (the interpreter's prefixes and
  import directories, the system's libraries), for bubblewrap's root and Landlock's rules.
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

# Where system-wide import directories and shared libraries live.
_SYSTEM_ROOTS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
# Read by the interpreter or the C library of any program: libraries, the linker cache, the
# time zone.
_SYSTEM_READ = (
    *(root for root in _SYSTEM_ROOTS if root != "/opt"),
    *("/bin", "/sbin", "/etc/ld.so.cache", "/etc/localtime"),
)

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


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@functools.cache
def interpreter_paths() -> tuple[str, ...]:
    """The interpreter's prefixes and the import directories outside them, as absolute paths.

    Import directories count only under system paths (``/usr``, ``/opt``, ...): an editable
    install's source tree or the project directory on ``sys.path`` is not readable to the code.
    """
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths = {os.path.abspath(p) for p in prefixes if p and os.path.isdir(p)}
    paths |= {os.path.realpath(p) for p in paths}
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if not real or not os.path.isdir(real) or any(_within(real, p) for p in paths):
            continue
        if any(_within(real, root) for root in _SYSTEM_ROOTS):
            paths.add(real)
    return tuple(sorted(p for p in paths if p != "/"))


def read_paths() -> list[str]:
    """Everything the sandboxed code may read besides its run directory."""
    return sorted({*interpreter_paths(), *_SYSTEM_READ})


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none), asked once."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    create_ruleset, version_flag = 444, 1
    abi = libc.syscall(create_ruleset, None, ctypes.c_size_t(0), ctypes.c_uint32(version_flag))
    return max(int(abi), 0)


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
