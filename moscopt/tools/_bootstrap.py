"""In-child bootstrap of the Python sandbox: confine this process, then run the user's code.

Run by `moscopt.tools.sandbox.run_python` as ``python -I -X utf8 _bootstrap.py CONFIG_JSON``
(never imported by moscopt itself). It uses the standard library only, because with ``-I`` the
moscopt package is not importable here (and must not be: the user's code must not see it).

Order matters, and each step is done while it is still possible:

1. read the config and the code file (they are readable only by the launching user);
2. if this process is PID 1 of a fresh PID namespace, fork: PID 1 stays behind as a tiny init
   that reaps and reports the worker's fate (PID 1 ignores most signals, which would defeat the
   CPU limit), and when it exits the kernel kills every process left in the namespace;
3. Landlock (if the kernel has it): no writes outside the work dir, no execve of anything, no TCP
   bind/connect, no signals or abstract-socket connections out of the sandbox; plus
   ``PR_SET_NO_NEW_PRIVS``. This needs ctypes, which is then dropped from ``sys.modules``;
4. resource limits (CPU, address space, file size, open files, core dumps, processes);
5. when started as root: drop to the unprivileged uid/gid chosen by the parent (no supplementary
   groups), and make the interpreter's own files importable even when they live in a directory
   that uid cannot read (e.g. a pyenv under /root), through ``/proc/self/fd`` paths to directories
   opened before the drop;
6. an audit hook (PEP 578) that refuses process spawning, sockets, ctypes, writes outside the
   work dir, reads of other processes' /proc entries and of the launching user's home;
7. run the code as ``__main__``; an uncaught exception prints a traceback (exit 1) and reports
   why on the status pipe (``memory``, ``blocked: <what>``, ``process-limit``).

The config arrives as ``marshal``-ed dict in hex (marshal is built in, json costs ~10 ms of
imports). Status messages to the parent are lines ``KEY<TAB>VALUE`` on the status pipe, with
newlines and backslashes in VALUE escaped as ``\\n`` and ``\\\\``.
"""

from __future__ import annotations

import builtins
import marshal
import os
import resource
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~10 ms (it imports re)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

# Start-up time matters (every run pays it), so this module imports only what is cheap; json,
# traceback and linecache (~15 ms with their dependencies) are imported where needed.

CODE_FILENAME = "main.py"
_TRACEBACK_FRAMES = 1000
_FD_PREFIX = "/proc/self/fd/"
# Paths under these prefixes that a write-open may name although they are outside the work dir:
# they are the process's own standard streams and the null device.
_WRITE_OK_EXACT = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_WRITE_OK_PREFIXES = ("/dev/fd/", _FD_PREFIX)


class SandboxViolation(PermissionError):
    """Raised inside the sandboxed process when the code attempts something forbidden."""


def _report(status_fd: int, key: str, value: str) -> None:
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    try:  # noqa: SIM105 - contextlib would cost an import at every start
        os.write(status_fd, f"{key}\t{escaped}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


# --------------------------------------------------------------------------- PID 1 supervisor


def _become_init_and_fork(status_fd: int) -> None:
    """As PID 1 of a new PID namespace, fork the worker; only the worker returns."""
    worker = os.fork()
    if worker == 0:
        return
    exit_code = 1
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == worker:
            exit_code = os.waitstatus_to_exitcode(status)
            break
    if exit_code < 0:
        _report(status_fd, "signal", str(-exit_code))
        os._exit(128 - exit_code)
    os._exit(exit_code)


# --------------------------------------------------------------------------------- Landlock

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same on all arches
_PR_SET_NO_NEW_PRIVS = 38
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_WRITE_ANY_V1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write/remove/make
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1


def _apply_landlock(workdir: str) -> list[str]:
    """Confine writes to ``workdir`` (and /dev/null) and forbid execve and TCP; best effort.

    Returns the names of the protections that took effect (empty when Landlock is unavailable).
    """
    import ctypes  # only here: the sandbox forbids ctypes once the user's code runs

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return []
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return []
    fs_rights = _FS_EXECUTE | _FS_WRITE_ANY_V1
    if abi >= 2:
        fs_rights |= _FS_REFER
    if abi >= 3:
        fs_rights |= _FS_TRUNCATE
    if abi >= 5:
        fs_rights |= _FS_IOCTL_DEV
    net_rights = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scopes = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0
    fields = [fs_rights] + ([net_rights] if abi >= 4 else []) + ([scopes] if abi >= 6 else [])
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    ruleset = libc.syscall(
        _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0
    )
    if ruleset < 0:
        return []

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    def allow(path: str, rights: int) -> bool:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            rule = PathBeneath(rights, fd)
            return libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) == 0
        finally:
            os.close(fd)

    try:
        file_rights = _FS_WRITE_FILE | (fs_rights & (_FS_TRUNCATE | _FS_IOCTL_DEV))
        ok = allow(workdir, fs_rights & ~_FS_EXECUTE) and allow("/dev/null", file_rights)
        if not ok or libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return []
    finally:
        os.close(ruleset)
    applied = [f"landlock-abi{abi}:fs-write", "landlock:no-exec"]
    if net_rights:
        applied.append("landlock:no-tcp")
    if scopes:
        applied.append("landlock:scoped-signals")
    return applied


def _forget_ctypes() -> None:
    for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
        del sys.modules[name]


def _disarm_posixsubprocess() -> None:
    """``_posixsubprocess.fork_exec`` spawns without an audit event: replace it by a refusal."""
    import _posixsubprocess

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise SandboxViolation("sandbox: starting processes is not allowed")

    _posixsubprocess.fork_exec = refuse  # type: ignore[assignment]


# -------------------------------------------------------------------------- limits, privileges


def _set_limits(cfg: dict[str, Any]) -> None:
    cpu = int(cfg["cpu_seconds"])
    limits = [
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at the soft limit, SIGKILL one second on
        (resource.RLIMIT_FSIZE, cfg["file_bytes"], cfg["file_bytes"]),
        (resource.RLIMIT_NOFILE, cfg["open_files"], cfg["open_files"]),
        (resource.RLIMIT_AS, cfg["memory_bytes"], cfg["memory_bytes"]),
    ]
    if cfg["max_processes"] is not None:
        limits.append((resource.RLIMIT_NPROC, cfg["max_processes"], cfg["max_processes"]))
    for which, soft, hard in limits:
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY and os.geteuid() != 0:
            hard = min(hard, current_hard)  # an unprivileged process cannot raise a hard limit
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))


def _open_path_dirs(entries: Iterable[str]) -> dict[str, int]:
    """O_PATH descriptors of the import directories, taken while they are still reachable."""
    fds: dict[str, int] = {}
    for entry in entries:
        if entry and entry not in fds and os.path.isdir(entry):
            fds[entry] = os.open(entry, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    return fds


def _drop_privileges(uid: int, gid: int) -> None:
    for fd in (0, 1, 2):
        # The pipes belong to the launching user; give them to the sandbox uid so that code
        # may reopen /dev/stdout and the like by path. The stdin file stays read-only to it.
        if fd != 0:
            try:  # noqa: SIM105 - no contextlib import at start-up
                os.fchown(fd, uid, gid)
            except OSError:
                pass
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - would be a kernel bug
        raise SystemExit("sandbox: could not drop privileges")


def _remap_unreadable_imports(fds: dict[str, int]) -> None:
    """Point imports at ``/proc/self/fd/N`` for import dirs the dropped uid cannot traverse."""
    mapping: dict[str, str] = {}
    for entry, fd in fds.items():
        if os.access(entry, os.R_OK | os.X_OK):
            os.close(fd)
        else:
            mapping[entry] = f"{_FD_PREFIX}{fd}"
    if not mapping:
        return
    prefixes = sorted(mapping, key=len, reverse=True)

    def remap(path: str) -> str:
        for prefix in prefixes:
            if path == prefix or path.startswith(prefix + os.sep):
                return mapping[prefix] + path[len(prefix) :]
        return path

    sys.path[:] = [remap(p) for p in sys.path]
    # Packages imported during start-up (encodings, collections, importlib, ...) find their
    # submodules through __path__, not sys.path.
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [remap(p) for p in search]
    sys.path_importer_cache.clear()


# ---------------------------------------------------------------------------------- audit hook

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
        "os.symlink",
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


def make_audit_hook(
    workdir: str, deny_read_dirs: list[str], allow_read_dirs: list[str]
) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook: raise `SandboxViolation` on forbidden events, return otherwise.

    ``deny_read_dirs`` (e.g. the launching user's home) may not be opened at all, except below
    ``allow_read_dirs`` (the interpreter and its site-packages, which may live in that home).
    """
    own_pid = os.getpid()
    try:  # in a PID namespace /proc still shows host PIDs, so ask /proc who we are
        proc_pid = os.readlink("/proc/self")
    except OSError:
        proc_pid = str(own_pid)
    own_proc = (f"/proc/{proc_pid}/", "/proc/self/", "/proc/thread-self/")
    realpath, join, fsdecode, getcwd = os.path.realpath, os.path.join, os.fsdecode, os.getcwd

    def resolve(path: object, dir_fd: object = None) -> str | None:
        if isinstance(path, int) or path is None:
            return None  # an already-open descriptor, checked when it was opened
        text = fsdecode(path)  # type: ignore[arg-type]
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(text):
            base = os.readlink(f"{_FD_PREFIX}{dir_fd}")
        else:
            base = getcwd()
        return realpath(join(base, text))

    def within(path: str, root: str) -> bool:
        return path == root or path.startswith(root + os.sep)

    def may_write(path: object, dir_fd: object = None) -> bool:
        if isinstance(path, (str, bytes)):
            text = fsdecode(path)
            if text in _WRITE_OK_EXACT or text.startswith(_WRITE_OK_PREFIXES):
                return True
        resolved = resolve(path, dir_fd)
        return resolved is None or within(resolved, workdir) or resolved in _WRITE_OK_EXACT

    def may_read(path: object) -> bool:
        resolved = resolve(path)
        if resolved is None or within(resolved, workdir):
            return True
        if resolved.startswith("/proc/") and resolved[6:7].isdigit():
            return resolved.startswith(own_proc)
        if any(within(resolved, d) for d in deny_read_dirs):
            return any(within(resolved, d) for d in allow_read_dirs)
        return True

    def refuse(what: str) -> None:
        raise SandboxViolation(f"sandbox: {what} is not allowed")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args[0], args[1], args[2]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing and not may_write(path):
                refuse(f"writing {path!r} (outside the work directory)")
            if not may_read(path):
                refuse(f"opening {path!r}")
            if mode is None and isinstance(path, (str, bytes)):
                # os.open() of a directory outside the work dir would give a dir_fd that the
                # "open" event cannot see in later relative opens.
                resolved = resolve(path)
                if resolved and os.path.isdir(resolved) and not within(resolved, workdir):
                    refuse(f"opening directory {path!r} as a descriptor")
        elif event in _SPAWN_EVENTS:
            refuse(f"starting processes ({event})")
        elif event in _NETWORK_EVENTS:
            refuse(f"network access ({event})")
        elif event.startswith("ctypes."):
            # `import ctypes` opens the process itself (dlopen(None)), and numpy imports ctypes;
            # looking up or calling any foreign function, or touching raw memory, is refused.
            if not (event == "ctypes.dlopen" and args[0] is None):
                refuse(f"ctypes ({event})")
        elif event in _OTHER_BLOCKED:
            refuse(event)
        elif event in _PATH_WRITE_EVENTS:
            for path_index, fd_index in _PATH_WRITE_EVENTS[event]:
                dir_fd = args[fd_index] if fd_index is not None and fd_index < len(args) else None
                path = args[path_index]
                if event == "sqlite3.connect" and path in (":memory:", "", b":memory:", b""):
                    continue
                if not may_write(path, dir_fd):
                    refuse(f"{event} on {path!r} (outside the work directory)")
        elif event in ("os.kill", "os.killpg"):
            if args[0] not in (own_pid, 0) or event == "os.killpg":
                refuse(f"signalling other processes ({event})")
        elif event == "import" and args[0] == "_posixsubprocess":
            refuse(f"importing {args[0]}")

    return hook


# ------------------------------------------------------------------------------------- running


def _reason_for(exc: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, SandboxViolation):
            return "blocked: " + str(current).removeprefix("sandbox: ").removesuffix(
                " is not allowed"
            )
        if isinstance(current, MemoryError):
            return "memory"
        if isinstance(current, BlockingIOError) and "fork" in str(current).lower():
            return "process-limit"
        current = current.__cause__ or current.__context__
    return None


def _print_user_traceback(exc: BaseException) -> None:
    """Print the traceback as Python would, without the bootstrap's own frames."""
    import traceback

    # The last 1000 frames, like the interpreter's own printer: a RecursionError after
    # sys.setrecursionlimit(10**6) must not take seconds to format.
    report = traceback.TracebackException.from_exception(exc, limit=-_TRACEBACK_FRAMES)
    pending = [report]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = traceback.StackSummary.from_list(
            [frame for frame in current.stack if frame.filename != __file__]
        )
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    sys.stderr.write("".join(report.format()))


def _run_user_code(code: str, status_fd: int) -> None:
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    main.__dict__["__file__"] = CODE_FILENAME
    sys.modules["__main__"] = main
    sys.argv = [CODE_FILENAME]
    try:
        exec(compile(code, CODE_FILENAME, "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        import linecache  # registered only now: tracebacks then show the code's lines

        lines = code.splitlines(keepends=True)
        linecache.cache[CODE_FILENAME] = (len(code), None, lines, CODE_FILENAME)
        reason = _reason_for(exc)
        if reason is not None:
            _report(status_fd, "reason", reason)
        try:
            _print_user_traceback(exc)
        except MemoryError:
            sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        raise SystemExit(1) from None


def main() -> None:
    cfg: dict[str, Any] = marshal.loads(bytes.fromhex(sys.argv[1]))
    status_fd: int = cfg["status_fd"]
    os.set_inheritable(status_fd, False)
    with open(cfg["code_path"], encoding="utf-8") as handle:
        code = handle.read()
    workdir: str = os.path.realpath(cfg["workdir"])
    allow_read = [p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p]
    allow_read += [p for p in sys.path if p]
    if os.getpid() == 1:
        _become_init_and_fork(status_fd)
    os.chdir(workdir)
    protections = _apply_landlock(workdir) if cfg["landlock"] else []
    _disarm_posixsubprocess()
    path_fds = _open_path_dirs(sys.path) if cfg["uid"] is not None else {}
    _set_limits(cfg)
    if cfg["uid"] is not None:
        _drop_privileges(cfg["uid"], cfg["gid"])
        _remap_unreadable_imports(path_fds)
        protections.append("uid")
    _forget_ctypes()
    _report(status_fd, "protections", ",".join(protections))
    sys.path.insert(0, workdir)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.addaudithook(make_audit_hook(workdir, cfg["deny_read_dirs"], allow_read))
    _run_user_code(code, status_fd)


if __name__ == "__main__":
    main()
