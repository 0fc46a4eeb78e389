"""In-child bootstrap of the Python sandbox: confine this process, then run the user's code.

Run by `moscopt.agent.tools.sandbox.run_python` as ``python -I -X utf8 -c STARTER CONFIG``, where
`STARTER` imports this module from its directory (so that its bytecode cache is used) and calls
`main`; moscopt itself imports it only in tests. It uses the standard library only, because with
``-I`` the moscopt package is not importable here (and must not be: the user's code must not
see it); its sibling modules `_kernel`, `_hook` and `_testrunner` are loaded from this file's
directory before anything is confined.

Order matters, and each step is done while it is still possible:

1. read the config and the code file (they are readable only by the launching user);
2. if this process is PID 1 of a fresh PID namespace (``unshare``; under bubblewrap its own init
   is PID 1), fork: PID 1 stays behind as a tiny init that reaps and reports the worker's fate
   (PID 1 ignores most signals, which would defeat the CPU limit), and when it exits the kernel
   kills every process left in the namespace;
3. when grading tests (`_testrunner`): fork the solution's process, which will never see the
   tests nor the token that proves they passed;
4. Landlock: reads only below the interpreter's, the system libraries' and the work dir's
   paths, writes only in the work dir, no execve, no TCP, no signals out (`_kernel`);
5. resource limits (CPU, address space, file size, open files, core dumps, processes);
6. when started as root: drop to the unprivileged uid/gid chosen by the parent (no supplementary
   groups), and make the interpreter's own files importable even when they live in a directory
   that uid cannot read (e.g. a pyenv under /root), through ``/proc/self/fd`` paths to
   directories opened before the drop;
7. seccomp: no new processes, no signals to others, no unix sockets, ... (`_kernel`); ctypes is
   then dropped from ``sys.modules``;
8. refuse to go on if nothing isolates reads from the rest of the machine (neither bubblewrap nor
   Landlock) unless the parent allowed running unsandboxed;
9. the audit hook (`_hook`), defence in depth;
10. run the code as ``__main__``; an uncaught exception prints a traceback (exit 1) and reports
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
    from types import ModuleType
    from typing import Any

# Start-up time matters (every run pays it), so this module imports only what is cheap; json,
# traceback and linecache (~15 ms with their dependencies) are imported where needed.

CODE_FILENAME = "main.py"
UNSANDBOXED_REASON = "unsandboxed: refused"
_TRACEBACK_FRAMES = 1000
_FD_PREFIX = "/proc/self/fd/"
_SIBLINGS = ("_kernel", "_hook", "_wire", "_testrunner")
STARTER = "import sys; sys.path.insert(0, {directory!r}); import _bootstrap; _bootstrap.main()"
STARTER_FILENAME = "<string>"


def _load_siblings() -> dict[str, ModuleType]:
    """Import the sandbox's helper modules from this directory, then hide them (and this module)
    from the code."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        modules = {name: __import__(name) for name in _SIBLINGS}
    finally:
        sys.path[:] = [p for p in sys.path if p != here]
        for name in (*_SIBLINGS, "_bootstrap"):
            sys.modules.pop(name, None)
    return modules


def _report(status_fd: int, key: str, value: str) -> None:
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
    try:  # noqa: SIM105 - contextlib would cost an import at every start
        os.write(status_fd, f"{key}\t{escaped}\n".encode("utf-8", "backslashreplace"))
    except OSError:
        pass


# --------------------------------------------------------------------------- PID 1 supervisor


def _become_init_and_fork(status_fd: int, secret_fd: int | None) -> None:
    """As PID 1 of a new PID namespace, fork the worker; only the worker returns."""
    worker = os.fork()
    if worker == 0:
        return
    if secret_fd is not None:
        os.close(secret_fd)  # only the judge may read the tests
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


def _within_any(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def confine(cfg: dict[str, Any], kernel: ModuleType, *, dumpable: bool = True) -> list[str]:
    """Steps 4-7 of the module docstring; returns the protections that took effect.

    ``dumpable=False`` keeps processes of the same uid from reading this one's memory and
    descriptors (set after the uid drop, which would reset it)."""
    workdir: str = cfg["workdir"]
    read_paths: list[str] = cfg["read_paths"]
    layers: dict[str, bool] = cfg["layers"]
    protections = ["bwrap"] if cfg["bwrap"] else []
    if layers["landlock"]:
        protections += kernel.apply_landlock(workdir, read_paths, [cfg["stdin_path"]])
    # Imports may only come from places the code may read (an editable install's source tree,
    # say, is on sys.path but not readable).
    sys.path[:] = [p for p in sys.path if p and _within_any(os.path.realpath(p), read_paths)]
    path_fds = _open_path_dirs(sys.path) if cfg["uid"] is not None else {}
    _set_limits(cfg)
    if cfg["uid"] is not None:
        _drop_privileges(cfg["uid"], cfg["gid"])
        _remap_unreadable_imports(path_fds)
        protections.append("uid")
    if not dumpable:
        kernel.set_dumpable(False)
    if layers["seccomp"]:
        protections += kernel.apply_seccomp((), cfg["net_namespace"])
    for name in [m for m in sys.modules if m == "ctypes" or m.startswith(("ctypes.", "_ctypes"))]:
        del sys.modules[name]
    _disarm_posixsubprocess()
    return protections


def reads_isolated(protections: list[str]) -> bool:
    return "bwrap" in protections or any(p.endswith(":fs-read") for p in protections)


def _disarm_posixsubprocess() -> None:
    """``_posixsubprocess.fork_exec`` spawns without an audit event: replace it by a refusal."""
    import _posixsubprocess

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError("sandbox: starting processes is not allowed")

    _posixsubprocess.fork_exec = refuse  # type: ignore[assignment]


# ------------------------------------------------------------------------------------- running


def reason_for(exc: BaseException, violation: type[BaseException]) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, violation) or str(current).startswith("sandbox: "):
            return "blocked: " + str(current).removeprefix("sandbox: ").removesuffix(
                " is not allowed"
            )
        if isinstance(current, MemoryError):
            return "memory"
        if isinstance(current, BlockingIOError) and "fork" in str(current).lower():
            return "process-limit"
        current = current.__cause__ or current.__context__
    return None


def print_user_traceback(exc: BaseException, hidden: Iterable[str]) -> None:
    """Print the traceback as Python would, without the frames of the files in ``hidden``."""
    import traceback

    hide = set(hidden)
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
            [frame for frame in current.stack if frame.filename not in hide]
        )
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    sys.stderr.write("".join(report.format()))


def run_user_code(
    code: str,
    report: Callable[[str, str], None],
    violation: type[BaseException],
    hidden: Iterable[str],
) -> dict[str, Any]:
    """Run ``code`` as ``__main__``; returns its namespace. An uncaught exception is reported
    (reason on the status pipe, traceback on stderr) and ends the process with exit code 1."""
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
        reason = reason_for(exc, violation)
        if reason is not None:
            report("reason", reason)
        try:
            print_user_traceback(exc, hidden)
        except MemoryError:
            sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        raise SystemExit(1) from None
    return main.__dict__


def main() -> None:
    cfg: dict[str, Any] = marshal.loads(bytes.fromhex(sys.argv[1]))
    status_fd: int = cfg["status_fd"]
    os.set_inheritable(status_fd, False)
    mods = _load_siblings()
    kernel, hook_module, runner = mods["_kernel"], mods["_hook"], mods["_testrunner"]
    hidden = [__file__, STARTER_FILENAME, *(str(m.__file__) for m in mods.values())]
    with open(cfg["code_path"], encoding="utf-8") as handle:
        code = handle.read()
    workdir = cfg["workdir"] = os.path.realpath(cfg["workdir"])
    allow_read = [p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p]
    if os.getpid() == 1:
        _become_init_and_fork(status_fd, cfg["tests_fd"])
    grading = runner.start(cfg, kernel) if cfg["tests_fd"] is not None else None
    if grading is not None and not grading.is_judge:
        status_fd = -1  # closed in the solution's process: only the judge reports
    judge = grading is not None and grading.is_judge
    # The solution's process may not read or trace the judge.
    protections = confine(cfg, kernel, dumpable=not judge)
    os.chdir(workdir)
    if not reads_isolated(protections) and not cfg["allow_unsandboxed"]:
        _report(status_fd, "reason", UNSANDBOXED_REASON)
        if grading is not None and grading.is_judge:
            grading.end(1)
        os._exit(1)
    if grading is None or grading.is_judge:
        _report(status_fd, "protections", ",".join(protections) or "none")
    if grading is None or not grading.is_judge:
        sys.path.insert(0, workdir)  # the judge never imports what the solution wrote
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if cfg["layers"]["hook"]:
        sys.addaudithook(hook_module.make_audit_hook(workdir, cfg["deny_read_dirs"], allow_read))
    violation = hook_module.SandboxViolation
    if grading is None:
        run_user_code(code, lambda k, v: _report(status_fd, k, v), violation, hidden)
    elif grading.is_judge:
        grading.judge(status_fd, lambda exc: print_user_traceback(exc, hidden))
    else:
        grading.serve(lambda: run_user_code(code, grading.report, violation, hidden))


if __name__ == "__main__":
    main()
