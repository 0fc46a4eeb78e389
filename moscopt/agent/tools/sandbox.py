"""Run model-written Python in a sandboxed child process: `run_python` returns an `ExecResult`.

Every run gets a new interpreter (``python -I -X utf8``), a fresh temporary work dir (also its
HOME and TMPDIR) that is removed afterwards whatever the code did to it, and an environment built
from an allow-list (PATH, LANG, LANGUAGE, LC_*, TZ, TERM, PYTHONHASHSEED): API keys, tokens and
proxies never reach it. The code runs as ``__main__`` from ``main.py``; stdin comes from a file.

The boundary is the kernel, never Python. Layers, strongest first (`isolation_available`):

- **bubblewrap** (`_bwrap`, when ``bwrap`` is installed and works): a minimal read-only root
  (``/usr``, the interpreter's prefixes, the run dir; no home, no project, no ``/tmp``, no other
  run), new PID, network, IPC, UTS and cgroup namespaces, a new session, killed with moscopt; as
  non-root a user namespace without capabilities or nested user namespaces;
- **Landlock** (Linux 5.13+, `_kernel`), inside bubblewrap too: reads only below interpreter,
  library and work dir paths, writes only in the work dir, no execve, no TCP (ABI 4+), no
  signals or abstract unix sockets out of the sandbox (ABI 6+);
- **seccomp**: no fork/vfork/clone of processes (threads work), no execve, signals only to
  itself, no pidfd/ptrace/cross-process memory, no unix sockets (socketpair stays), inet and
  netlink only in a private netns, no io_uring/mount/namespace/BPF/keyring/module calls/TIOCSTI;
- ``unshare`` network and PID namespaces when bubblewrap is not used and they work;
- as root, a random unprivileged uid/gid per run (no groups, no capabilities), so file
  permissions protect the rest of the machine and RLIMIT_NPROC counts this run only (in a user
  namespace of its own, as non-root, RLIMIT_NPROC counts that namespace only, so it is set too);
- rlimits (CPU ``cpu_seconds``, address space ``memory_mb``, `FILE_SIZE_LIMIT` per file,
  `OPEN_FILES_LIMIT`, no core dumps, ``max_processes``), the wall clock (the whole process tree
  is SIGKILLed and reaped before `run_python` returns), output read with bounded memory (killed
  once a stream passes `output_kill_bytes`), the work dir's total (`_workdir.DISK_LIMIT`,
  measured every 50 ms: killed past it, ``killed_reason="disk-limit"``, on every machine);
- the audit hook (`moscopt.agent.tools._hook`): defence in depth and clear error messages
  (``killed_reason="blocked: <what>"``); pure Python can get past it, and nothing relies on it.

Where nothing isolates reads (neither bubblewrap nor Landlock), the code does not run:
``killed_reason`` is `UNSANDBOXED_REFUSED`, unless the caller passes ``allow_unsandboxed``
(config key ``agent.allow_unsandboxed``); the result's ``isolation`` is then "unsandboxed".

What holds where. Columns B and L are the attack suite's modes (``tests/agent/tools/
test_attacks*.py``: model code through the agent's tool, each kernel layer alone with the audit
hook off, run as root and as nobody): B = bubblewrap alone; L = Landlock + seccomp alone (no
bubblewrap, no namespaces). U = neither (only with ``allow_unsandboxed``) follows from the layers
left; the suite does not run it, ``tests/agent/tools/test_fallbacks.py`` covers its basics:

=========================================  ===============  ===============  ===============
attack                                      B                L                U
=========================================  ===============  ===============  ===============
read ~/.ssh/id_rsa, a project's .env        not in the root  Landlock reads   root: uid drop;
(world-readable), list directories                                            else NOT HELD
``os.path.isdir`` patch, ``_getframe``      as above         as above         NOT HELD
rebinding of the hook's globals
sqlite3 ``file:`` URI, ``ATTACH``           not in the root  Landlock reads   hook (URI) only
model-written .so (ctypes, load_extension)  runs, confined   runs, confined   hook only
write outside the work dir                  read-only root   Landlock writes  hook, uid drop
parent's /proc/PID/environ, API key env     own /proc; env   Landlock; env    hook; env
TCP, UDP, DNS                               net namespace    seccomp, Landl.  seccomp
unix path socket (ssh-agent, D-Bus)         not in the root  seccomp          seccomp
pidfd_send_signal / kill of the parent,     PID namespace    seccomp, Landl.  seccomp
kill(-1), of a bystander                                     scoped signals
fork bomb                                   PID ns + NPROC   seccomp          seccomp
setsid daemon outliving the call            PID namespace    seccomp          seccomp
memory flood, output flood                  rlimit, reader   rlimit, reader   rlimit, reader
disk flood (many files)                     watcher          watcher          watcher
another concurrent run's work dir           not in the root  Landlock reads   root: uid drop
=========================================  ===============  ===============  ===============

On this machine (Linux 6.18, Landlock ABI 7, bubblewrap 0.8.0, user namespaces) every row holds
in B and L, as root and as nobody, and so does the default (B with Landlock, seccomp and the hook
inside). Not prevented anywhere: reading world-readable files under ``/usr``; CPU, memory and
disk below the limits (disk: up to 50 ms of writes past it); native code from a model-written
shared library (inside the same confinement). Without seccomp (a kernel without it) L loses
its rows marked seccomp for non-root users. As root, the system temp dir must be traversable
by other users (it is, normally: /tmp is 1777).

Grading (``tests=`` a `TestSpec`): the tests run in a judge process of their own and
``tests_passed`` is True only when the judge sent the run's secret token, which the solution's
process never sees (`moscopt.agent.tools._testrunner`); an exit code proves nothing.

Thread safety: `run_python` may be called from many threads at once. It uses no ``preexec_fn``:
the new session, closing of inherited descriptors and the passed pipes are set up by
`subprocess` in C between fork and exec, and everything else (limits, Landlock, seccomp,
privilege drop, audit hook) is done by the bootstrap inside the new interpreter
(`moscopt.agent.tools._bootstrap`), before the user's code. No state is shared between calls except
the memoized probes of what the host offers.
"""

from __future__ import annotations

import marshal
import math
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Imported here only so that their bytecode is cached: the sandboxed interpreter loads them
# from their directory at every start (see _bootstrap._load_siblings).
from moscopt.agent.tools import _bootstrap, _bwrap, _hook, _isolation, _kernel, _testrunner, _wire  # noqa: F401
from moscopt.agent.tools._capture import StreamBuffer, Watched, kill_group, watch
from moscopt.agent.tools._workdir import RunDirs, run_dirs

FILE_SIZE_LIMIT = 64 * 1024 * 1024
OPEN_FILES_LIMIT = 256
_STARTER = _bootstrap.STARTER.format(directory=str(Path(__file__).resolve().parent))
_SIGNAL_REASONS: dict[int, str] = {signal.SIGXCPU: "cpu-time", signal.SIGXFSZ: "file-size"}
_CHILD_REFUSED = "unsandboxed: refused"  # the bootstrap's reason (see _bootstrap.py)
UNSANDBOXED_REFUSED = (
    "unsandboxed: refused to run: nothing on this machine keeps the code from reading your files "
    "(install bubblewrap, or use Linux 5.13+ with Landlock; or set agent.allow_unsandboxed)"
)


@dataclass(frozen=True)
class Layers:
    """Which isolation layers to use where the machine has them (only tests turn some off, to
    check that each remaining layer holds alone and to emulate weaker machines)."""

    bwrap: bool = True
    namespaces: bool = True  # ``unshare``, when bwrap is not used
    landlock: bool = True
    seccomp: bool = True
    uid_drop: bool = True
    hook: bool = True


_LAYERS = Layers()


@dataclass(frozen=True)
class TestSpec:
    """Tests to grade the program against (see `moscopt.agent.tools._testrunner`).

    ``prefix`` is the prompt's code (its helpers are the tests' own copies; its functions with
    an empty body are the ones to implement), ``tests`` the test code, ``entry_points`` names
    the tests call that may shadow builtins (e.g. a task's function called ``sum``).
    """

    tests: str
    prefix: str = ""
    entry_points: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one sandboxed run.

    ``stdout``/``stderr`` hold at most ``max_output`` characters each (plus a truncation marker).
    ``exit_code`` is None when the process was killed by a signal (timeout, a limit).
    ``killed_reason`` explains a failure the sandbox caused or detected: "timeout", "memory",
    "output-limit", "disk-limit", "process-limit", "cpu-time", "file-size", "signal: SIGSEGV",
    "blocked: <what>", `UNSANDBOXED_REFUSED` (the code did not run); None if it ran to its end.
    ``isolation``: what kept the code from the machine's files: "bwrap", "landlock", or
    "unsandboxed" (only with ``allow_unsandboxed``: log it); "" if the sandbox did not start.
    ``tests_passed`` (with a `TestSpec`): True only when the judge proved every test passed.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    killed_reason: str | None
    duration: float
    isolation: str = ""
    tests_passed: bool | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.killed_reason is None


def output_kill_bytes(max_output: int) -> int:
    """Bytes on one stream after which the child is killed for flooding its output."""
    return max(1 << 20, 16 * max_output)


def isolation_available() -> str:
    """What would isolate reads here: "bwrap", "landlock" or "unsandboxed" (probed once).

    For a run's events and report: "unsandboxed" means model-written code runs only with
    ``allow_unsandboxed`` (config key ``agent.allow_unsandboxed``).
    """
    if _LAYERS.bwrap and _bwrap.available():
        return "bwrap"
    if _LAYERS.landlock and _isolation.landlock_abi() >= 1:
        return "landlock"
    return "unsandboxed"


def isolation_notice(allow_unsandboxed: bool) -> str:
    """One line for a run's events: what will isolate the model-written code it runs."""
    isolation = isolation_available()
    if isolation != "unsandboxed":
        return f"model-written code runs in the sandbox ({isolation} isolates reads)"
    if allow_unsandboxed:
        return (
            "model-written code runs UNSANDBOXED: nothing isolates reads on this machine and "
            "agent.allow_unsandboxed is set (it can read your files)"
        )
    return f"model-written code will not run: {UNSANDBOXED_REFUSED}"


def run_python(
    code: str,
    *,
    stdin: str = "",
    timeout: float = 10.0,
    cpu_seconds: float | None = None,
    memory_mb: int = 1024,
    max_output: int = 20_000,
    max_processes: int = 32,
    files: Mapping[str, str] | None = None,
    tests: TestSpec | None = None,
    allow_unsandboxed: bool = False,
) -> ExecResult:
    """Run ``code`` as ``__main__`` in a sandboxed interpreter and report what happened.

    ``files`` maps relative paths to text written into the fresh work dir first. With ``tests``
    the code is the solution, and ``tests_passed`` says whether it passed them. Where nothing
    isolates reads (see `isolation_available`), the code does not run unless
    ``allow_unsandboxed``. Never raises for anything the code does; raises ValueError for bad
    arguments (a non-positive limit, a file name that is absolute or contains ``..``) and
    OSError only if the interpreter cannot start.
    """
    if timeout <= 0 or memory_mb <= 0 or max_output < 0 or max_processes < 1:
        raise ValueError("timeout, memory_mb and max_processes must be positive")
    cpu = math.ceil(cpu_seconds if cpu_seconds is not None else timeout + 1)
    if cpu <= 0:
        raise ValueError("cpu_seconds must be positive")
    layers = _LAYERS
    identity = _isolation.sandbox_identity() if layers.uid_drop else None
    use_bwrap = layers.bwrap and _bwrap.available()
    unshare = () if use_bwrap or not layers.namespaces else _isolation.namespace_prefix()
    token = secrets.token_hex(16) if tests is not None else ""
    started = time.monotonic()
    with run_dirs(code, stdin, files, identity) as dirs:
        prefix = _bwrap.command(dirs.base, dirs.work) if use_bwrap else list(unshare)
        # A user namespace of its own (bwrap or unshare as non-root) counts only its processes.
        own_count = identity is not None or (bool(prefix) and not _isolation.is_root())
        config = {
            **_child_config(dirs, identity, cpu, memory_mb, max_processes if own_count else None),
            "bwrap": use_bwrap,
            "net_namespace": bool(prefix),
            "layers": {"landlock": layers.landlock, "seccomp": layers.seccomp, "hook": layers.hook},
            "allow_unsandboxed": allow_unsandboxed,
        }
        watched = _launch(prefix, dirs, config, tests, token, timeout, max_output)
        if identity is not None and not prefix:
            _isolation.kill_processes_of(identity[0])
    duration = time.monotonic() - started
    exit_code, reason = _interpret(
        watched.returncode, watched.status, watched.timed_out, watched.limit
    )
    protections = next((v for k, v in watched.status if k == "protections"), None)
    return ExecResult(
        stdout=_text(watched.stdout, max_output),
        stderr=_text(watched.stderr, max_output),
        exit_code=exit_code,
        timed_out=watched.timed_out,
        killed_reason=reason,
        duration=duration,
        isolation=_isolation_name(protections),
        tests_passed=None if tests is None else ("verdict", token) in watched.status,
    )


def _launch(
    prefix: list[str],
    dirs: RunDirs,
    config: dict[str, object],
    tests: TestSpec | None,
    token: str,
    timeout: float,
    max_output: int,
) -> Watched:
    status_read, status_write = os.pipe2(os.O_CLOEXEC)
    secret_fd = _secret_file(tests, token) if tests is not None else None
    passed = (status_write,) if secret_fd is None else (status_write, secret_fd)
    config = {**config, "status_fd": status_write, "tests_fd": secret_fd}
    argv = [*prefix, sys.executable, "-I", "-X", "utf8", "-c", _STARTER]
    try:
        with open(dirs.stdin, "rb") as stdin_file:
            proc = subprocess.Popen(
                [*argv, marshal.dumps(config).hex()],
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=dirs.work,
                env=_isolation.scrubbed_environment(os.environ, str(dirs.work)),
                start_new_session=True,
                pass_fds=passed,
            )
    except BaseException:
        os.close(status_read)
        raise
    finally:
        for fd in passed:
            os.close(fd)
    try:
        return watch(
            proc,
            status_read,
            timeout=timeout,
            keep_bytes=4 * max_output + 4,
            kill_after_bytes=output_kill_bytes(max_output),
            pid_namespace=bool(prefix),
            work_dir=dirs.work,
        )
    except BaseException:  # e.g. KeyboardInterrupt: the child must not outlive the call
        kill_group(proc.pid)
        proc.wait()
        raise


def _secret_file(tests: TestSpec, token: str) -> int:
    """A memory file with what only the judge may know: the tests and the run's token."""
    secret = {
        "token": token,
        "tests": tests.tests,
        "prefix": tests.prefix,
        "entry_points": list(tests.entry_points),
    }
    fd = os.memfd_create("moscopt-tests", os.MFD_CLOEXEC)
    data = memoryview(marshal.dumps(secret))
    while data:
        data = data[os.write(fd, data) :]
    return fd


def _child_config(
    dirs: RunDirs,
    identity: tuple[int, int] | None,
    cpu_seconds: int,
    memory_mb: int,
    max_processes: int | None,
) -> dict[str, object]:
    """The bootstrap's settings (see `moscopt.agent.tools._bootstrap.main`)."""
    return {
        "code_path": str(dirs.code),
        "stdin_path": str(dirs.stdin),
        "workdir": str(dirs.work),
        "uid": identity[0] if identity else None,
        "gid": identity[1] if identity else None,
        "cpu_seconds": cpu_seconds,
        "memory_bytes": memory_mb * 1024 * 1024,
        "file_bytes": FILE_SIZE_LIMIT,
        "open_files": OPEN_FILES_LIMIT,
        "max_processes": max_processes,
        "read_paths": _isolation.read_paths(),
        "deny_read_dirs": _isolation.home_directories(),
    }


def _isolation_name(protections: str | None) -> str:
    if protections is None:
        return ""
    names = protections.split(",")
    if "bwrap" in names:
        return "bwrap"
    if any(name.endswith(":fs-read") for name in names):
        return "landlock"
    return "unsandboxed"


def _interpret(
    returncode: int, status: list[tuple[str, str]], timed_out: bool, limit: str | None
) -> tuple[int | None, str | None]:
    """Map the raw outcome to (exit_code, killed_reason); `limit`: the bound it was killed at."""
    if timed_out:
        return None, "timeout"
    if limit:
        return None, limit
    signum: int | None = -returncode if returncode < 0 else None
    for key, value in status:
        if key == "signal" and value.isdigit():
            signum = int(value)
    if signum is not None:
        return None, _SIGNAL_REASONS.get(signum) or f"signal: {_signal_name(signum)}"
    reasons = [value for key, value in status if key == "reason"]
    if not any(key == "protections" for key, _ in status):
        if reasons and reasons[0] == _CHILD_REFUSED:
            return None, UNSANDBOXED_REFUSED
        return returncode, "sandbox failed to start"
    return returncode, reasons[0] if reasons else None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def _text(buffer: StreamBuffer, max_output: int) -> str:
    text = bytes(buffer.data).decode("utf-8", errors="replace")
    if len(text) <= max_output and buffer.total == len(buffer.data):
        return text
    return text[:max_output] + f"\n[... output truncated: {buffer.total} bytes in total]"
