"""Run model-written Python in a sandboxed child process: `run_python` returns an `ExecResult`.

Every run gets a new interpreter (``python -I -X utf8``: isolated mode, no PYTHON* variables, no
user site-packages; the venv's site-packages stay importable), a fresh temporary working
directory (also its HOME and TMPDIR) that is removed afterwards whatever the code did to it, and
an environment built from an allow-list (PATH, LANG, LANGUAGE, LC_*, TZ, TERM, PYTHONHASHSEED):
API keys, tokens, AWS/HF/auth variables and proxies never reach it. The code runs as
``__main__`` from ``main.py``; stdin comes from a file, so a large ``stdin`` cannot block.

What is prevented, layer by layer, and when each layer applies:

Always (any Linux, root or not):
  - wall clock: the child leads its own session; on timeout (and after every run) its whole
    process group is SIGKILLed and reaped before `run_python` returns (no zombies);
  - rlimits set by the bootstrap before the code runs: CPU seconds (``cpu_seconds``, default
    ``ceil(timeout) + 1``: SIGXCPU, then SIGKILL a second later), address space
    (``memory_mb``: a 10 GB allocation raises MemoryError), file size (`FILE_SIZE_LIMIT`), open
    files (`OPEN_FILES_LIMIT`), no core dumps;
  - output: read incrementally from pipes; at most ~4 x ``max_output`` bytes per stream are
    kept, and the child is killed ("output-limit") once a stream passes `output_kill_bytes`,
    so printing gigabytes costs moscopt nothing. stdout is line-buffered in the child so that
    output printed before a timeout is kept;
  - an audit hook (PEP 578) installed before the code runs refuses: os.fork/forkpty/exec*/
    posix_spawn/spawn*/system and subprocess (also ``_posixsubprocess.fork_exec``, which raises
    no audit event); socket connect/bind/sendto/sendmsg and name lookups; ctypes beyond
    ``import ctypes`` (no foreign calls, no raw memory); writes outside the work dir (open for
    writing, mkdir, remove, rename, link, chmod, chown, utime, truncate, sqlite files; symlinks
    and ``dir_fd`` resolved; /dev/null and the own std streams allowed); creating symlinks;
    reading /proc entries of other processes and anything under the launching user's home
    (except the interpreter's own files); setrlimit; signalling other processes; gc object
    walks; settrace/setprofile. A refusal raises PermissionError inside the code; if it is not
    caught the result has ``killed_reason="blocked: <what>"``. Standard-library imports (math,
    re, collections, itertools, heapq, hashlib, json, ...) and numpy/sympy work.
Linux with Landlock (5.13+; probed in the child, root or not), kernel-enforced, irrevocable and
inherited by any descendant:
  - writes only below the work dir and to /dev/null; no execve of any file; no_new_privs;
  - Landlock ABI 4+ (Linux 6.7+): no TCP bind or connect;
  - Landlock ABI 6+ (Linux 6.12+): no signals to, and no abstract unix sockets of, processes
    outside the sandbox.
Where ``unshare`` works (root; or non-root with unprivileged user namespaces; probed once):
  - a new network namespace: no interface but a down loopback, so no network at all (UDP and
    DNS included);
  - a new PID namespace: the code cannot see or signal outside processes by PID, and when the
    run ends the kernel kills every process left in it, even one that called setsid().
When moscopt runs as root:
  - the child drops to a random unprivileged uid/gid (one per run, no supplementary groups, no
    capabilities) right after setting its limits: file permissions protect the rest of the
    system (the repo, /root, other runs' dirs), RLIMIT_NPROC (``max_processes``) is enforced
    and counts this run's processes only. If the interpreter lives where that uid cannot read
    (e.g. a pyenv under /root), imports go through ``/proc/self/fd`` handles to the import
    directories opened before the drop. Without a PID namespace, processes of that uid are
    swept after the run.

Not prevented: reading world-readable files (/etc, the repo's source) — nothing secret should be
world-readable; using CPU and memory up to the limits; filling the disk below the work dir with
many files each under `FILE_SIZE_LIMIT` (removed afterwards). Without Landlock and without root,
only the audit hook guards against writes to user-writable places outside the work dir (e.g.
/tmp, the user's own files), and without namespaces it is also the only guard against network
access; an audit hook is not a security boundary (PEP 578): code determined to get past it may
manage. As non-root, RLIMIT_NPROC is not set (it would count every process of the user); the
audit hook and Landlock's no-exec are what stop a fork bomb there. As root, the system temp dir
must be traversable by other users (it is, normally: /tmp is 1777).

Thread safety: `run_python` may be called from many threads at once. It uses no ``preexec_fn``
(documented as unsafe with threads): the new session, closing of inherited descriptors and the
passed status pipe are set up by `subprocess` in C between fork and exec, and everything else
(limits, Landlock, privilege drop, audit hook) is done by the bootstrap inside the new
interpreter (`moscopt.tools._bootstrap`), before the user's code. No state is shared between
calls except the memoized ``unshare`` probe.
"""

from __future__ import annotations

import marshal
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from moscopt.tools import _isolation
from moscopt.tools._capture import StreamBuffer, kill_group, watch
from moscopt.tools._workdir import RunDirs, run_dirs

FILE_SIZE_LIMIT = 64 * 1024 * 1024
OPEN_FILES_LIMIT = 256
_BOOTSTRAP = Path(__file__).with_name("_bootstrap.py")
# Whether the child applies Landlock when the kernel has it; tests switch it off to exercise the
# weaker layers on their own.
_USE_LANDLOCK = True
_SIGNAL_REASONS: dict[int, str] = {signal.SIGXCPU: "cpu-time", signal.SIGXFSZ: "file-size"}


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one sandboxed run.

    ``stdout``/``stderr`` hold at most ``max_output`` characters each (plus a truncation marker).
    ``exit_code`` is None when the process was killed by a signal (timeout, CPU limit, output
    limit). ``killed_reason`` explains a failure the sandbox caused or detected: "timeout",
    "memory", "output-limit", "process-limit", "cpu-time", "file-size", "signal: SIGSEGV",
    "blocked: <what>"; None when the code ran to its own end.
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    killed_reason: str | None
    duration: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.killed_reason is None


def output_kill_bytes(max_output: int) -> int:
    """Bytes on one stream after which the child is killed for flooding its output."""
    return max(1 << 20, 16 * max_output)


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
) -> ExecResult:
    """Run ``code`` as ``__main__`` in a sandboxed interpreter and report what happened.

    ``files`` maps relative paths to text written into the fresh work dir first. Never raises
    for anything the code does; raises ValueError for bad arguments (a non-positive limit, a file
    name that is absolute or contains ``..``) and OSError only if the interpreter cannot start.
    """
    if timeout <= 0 or memory_mb <= 0 or max_output < 0 or max_processes < 1:
        raise ValueError("timeout, memory_mb and max_processes must be positive")
    cpu = math.ceil(cpu_seconds if cpu_seconds is not None else timeout + 1)
    if cpu <= 0:
        raise ValueError("cpu_seconds must be positive")
    identity = _isolation.sandbox_identity()
    prefix = _isolation.namespace_prefix()
    started = time.monotonic()
    with run_dirs(code, stdin, files, identity) as dirs:
        status_read, status_write = os.pipe2(os.O_CLOEXEC)
        config = _child_config(dirs, status_write, identity, cpu, memory_mb, max_processes)
        argv = [*prefix, sys.executable, "-I", "-X", "utf8", str(_BOOTSTRAP)]
        try:
            with open(dirs.stdin, "rb") as stdin_file:
                proc = subprocess.Popen(
                    [*argv, _encode_config(config)],
                    stdin=stdin_file,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=dirs.work,
                    env=_isolation.scrubbed_environment(os.environ, str(dirs.work)),
                    start_new_session=True,
                    pass_fds=(status_write,),
                )
        except BaseException:
            os.close(status_read)
            raise
        finally:
            os.close(status_write)
        try:
            watched = watch(
                proc,
                status_read,
                timeout=timeout,
                keep_bytes=4 * max_output + 4,
                kill_after_bytes=output_kill_bytes(max_output),
                pid_namespace=bool(prefix),
            )
        except BaseException:  # e.g. KeyboardInterrupt: the child must not outlive the call
            kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            if identity is not None and not prefix:
                _isolation.kill_processes_of(identity[0])
    duration = time.monotonic() - started
    exit_code, reason = _interpret(
        watched.returncode, watched.status, watched.timed_out, watched.output_limit_hit
    )
    return ExecResult(
        stdout=_text(watched.stdout, max_output),
        stderr=_text(watched.stderr, max_output),
        exit_code=exit_code,
        timed_out=watched.timed_out,
        killed_reason=reason,
        duration=duration,
    )


def _child_config(
    dirs: RunDirs,
    status_fd: int,
    identity: tuple[int, int] | None,
    cpu_seconds: int,
    memory_mb: int,
    max_processes: int,
) -> dict[str, object]:
    """The bootstrap's settings (see `moscopt.tools._bootstrap.main`)."""
    return {
        "code_path": str(dirs.code),
        "workdir": str(dirs.work),
        "status_fd": status_fd,
        "uid": identity[0] if identity else None,
        "gid": identity[1] if identity else None,
        "cpu_seconds": cpu_seconds,
        "memory_bytes": memory_mb * 1024 * 1024,
        "file_bytes": FILE_SIZE_LIMIT,
        "open_files": OPEN_FILES_LIMIT,
        # Without a uid of its own, RLIMIT_NPROC would count every process of the user.
        "max_processes": max_processes if identity else None,
        "landlock": _USE_LANDLOCK,
        "deny_read_dirs": _isolation.home_directories(),
    }


def _encode_config(config: Mapping[str, object]) -> str:
    """The bootstrap's argument: a marshal-ed dict, hex-encoded (cheap to decode in the child)."""
    return marshal.dumps(dict(config)).hex()


def _interpret(
    returncode: int,
    status: list[tuple[str, str]],
    timed_out: bool,
    output_limit: bool,
) -> tuple[int | None, str | None]:
    """Map the raw outcome to (exit_code, killed_reason)."""
    if timed_out:
        return None, "timeout"
    if output_limit:
        return None, "output-limit"
    signum: int | None = -returncode if returncode < 0 else None
    for key, value in status:
        if key == "signal" and value.isdigit():
            signum = int(value)
    if signum is not None:
        return None, _SIGNAL_REASONS.get(signum) or f"signal: {_signal_name(signum)}"
    if not any(key == "protections" for key, _ in status):
        return returncode, "sandbox failed to start"
    reasons = [value for key, value in status if key == "reason"]
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
