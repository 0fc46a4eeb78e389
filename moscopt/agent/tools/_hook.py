"""The sandbox's audit hook (PEP 578): defence in depth, never the boundary.

Loaded by `moscopt.agent.tools._bootstrap` inside the sandboxed interpreter (standard library only).
PEP 578 says it plainly: an audit hook cannot stop code that sets out to defeat it, and pure
Python can (the kernel layers in `moscopt.agent.tools._kernel` and bubblewrap are what hold). The
hook turns the common mistakes into a clear ``PermissionError`` and keeps a few cheap tricks from
working: everything it consults is bound in its closure when it is made (patching
``os.path.isdir`` or rebinding module globals through ``sys._getframe`` changes nothing), and
SQLite URIs and extension loading are refused. SQLite's ``ATTACH`` opens files without any
audit event: only the kernel layers stop it.
"""

from __future__ import annotations

import os
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_FD_PREFIX = "/proc/self/fd/"
# Paths under these prefixes that a write-open may name although they are outside the work dir:
# they are the process's own standard streams and the null device.
_WRITE_OK_EXACT = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_WRITE_OK_PREFIXES = ("/dev/fd/", _FD_PREFIX)

_SPAWN_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.startfile",
        "subprocess.Popen",
        "pty.spawn",
    }
)
_NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sethostname",
    }
)
_OTHER_BLOCKED = frozenset(
    {
        "resource.setrlimit",
        "resource.prlimit",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "os.symlink",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
    }
)
# event name -> indices of (path, dir_fd) pairs among its arguments that name things it changes
_PATH_WRITE_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.mkdir": ((0, 2),),
    "os.rmdir": ((0, 1),),
    "os.remove": ((0, 1),),
    "os.rename": ((0, 2), (1, 3)),
    "os.link": ((0, 2), (1, 3)),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.truncate": ((0, None),),
    "os.utime": ((0, 3),),
    "os.mkfifo": ((0, 2),),
    "os.mknod": ((0, 3),),
    "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),),
    "os.chflags": ((0, None),),
    "os.lchflags": ((0, None),),
    "sqlite3.connect": ((0, None),),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolation(PermissionError):
    """Raised inside the sandboxed process when the code attempts something forbidden."""


def make_audit_hook(
    workdir: str, deny_read_dirs: list[str], allow_read_dirs: list[str]
) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook: raise `SandboxViolation` on forbidden events, return otherwise.

    ``deny_read_dirs`` (e.g. the launching user's home) may not be opened at all, except below
    ``allow_read_dirs`` (the interpreter and its site-packages, which may live in that home).
    """
    own_pid = os.getpid()
    may_signal = (own_pid, 0)
    try:  # in a PID namespace /proc may still show host PIDs, so ask /proc who we are
        proc_pid = os.readlink("/proc/self")
    except OSError:
        proc_pid = str(own_pid)
    own_proc = (f"/proc/{proc_pid}/", "/proc/self/", "/proc/thread-self/")
    realpath, join, fsdecode, getcwd = os.path.realpath, os.path.join, os.fsdecode, os.getcwd
    isabs, isdir, readlink = os.path.isabs, os.path.isdir, os.readlink
    spawn, network, other = _SPAWN_EVENTS, _NETWORK_EVENTS, _OTHER_BLOCKED
    path_writes = types.MappingProxyType(dict(_PATH_WRITE_EVENTS))
    deny_read, allow_read = tuple(deny_read_dirs), tuple(allow_read_dirs)
    write_exact, write_prefixes, write_flags = _WRITE_OK_EXACT, _WRITE_OK_PREFIXES, _WRITE_FLAGS
    violation, sep = SandboxViolation, os.sep

    def resolve(path: object, dir_fd: object = None) -> str | None:
        if isinstance(path, int) or path is None:
            return None  # an already-open descriptor, checked when it was opened
        text = fsdecode(path)  # type: ignore[arg-type]
        if isinstance(dir_fd, int) and dir_fd >= 0 and not isabs(text):
            base = readlink(f"{_FD_PREFIX}{dir_fd}")
        else:
            base = getcwd()
        return realpath(join(base, text))

    def within(path: str, root: str) -> bool:
        return path == root or path.startswith(root + sep)

    def may_write(path: object, dir_fd: object = None) -> bool:
        if isinstance(path, (str, bytes)):
            text = fsdecode(path)
            if text in write_exact or text.startswith(write_prefixes):
                return True
        resolved = resolve(path, dir_fd)
        return resolved is None or within(resolved, workdir) or resolved in write_exact

    def may_read(path: object) -> bool:
        resolved = resolve(path)
        if resolved is None or within(resolved, workdir):
            return True
        if resolved.startswith("/proc/") and resolved[6:7].isdigit():
            return resolved.startswith(own_proc)
        if any(within(resolved, d) for d in deny_read):
            return any(within(resolved, d) for d in allow_read)
        return True

    def refuse(what: str) -> None:
        raise violation(f"sandbox: {what} is not allowed")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args[0], args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags
            )
            if writing and not may_write(path):
                refuse(f"writing {path!r} (outside the work directory)")
            if not may_read(path):
                refuse(f"opening {path!r}")
            if mode is None and isinstance(path, (str, bytes)):
                # os.open() of a directory outside the work dir would give a dir_fd that the
                # "open" event cannot see in later relative opens.
                resolved = resolve(path)
                if resolved and isdir(resolved) and not within(resolved, workdir):
                    refuse(f"opening directory {path!r} as a descriptor")
        elif event in spawn:
            refuse(f"starting processes ({event})")
        elif event in network:
            refuse(f"network access ({event})")
        elif event.startswith("ctypes."):
            # `import ctypes` opens the process itself (dlopen(None)), and numpy imports ctypes;
            # looking up or calling any foreign function, or touching raw memory, is refused.
            if not (event == "ctypes.dlopen" and args[0] is None):
                refuse(f"ctypes ({event})")
        elif event in other:
            refuse(event)
        elif event in path_writes:
            for path_index, fd_index in path_writes[event]:
                dir_fd = args[fd_index] if fd_index is not None and fd_index < len(args) else None
                path = args[path_index]
                if event == "sqlite3.connect":
                    if path in (":memory:", "", b":memory:", b""):
                        continue
                    if fsdecode(path).startswith("file:"):
                        refuse("sqlite3.connect with a URI")
                if not may_write(path, dir_fd):
                    refuse(f"{event} on {path!r} (outside the work directory)")
        elif event in ("os.kill", "os.killpg"):
            if args[0] not in may_signal or event == "os.killpg":
                refuse(f"signalling other processes ({event})")
        elif event == "import" and args[0] == "_posixsubprocess":
            refuse(f"importing {args[0]}")

    return hook
