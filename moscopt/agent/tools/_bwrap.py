"""The bubblewrap launcher: a minimal root for the sandboxed interpreter.

`bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox of Flatpak) is
used when it is installed and works here (probed once per process). The child then sees a
read-only root made of:

- the system's ``/usr`` (and the ``/bin``, ``/lib*`` links or directories), the dynamic linker
  cache and ``/etc/localtime``: the libraries the interpreter links against; nothing else of
  ``/etc``;
- the interpreter's prefixes (the venv, the base installation) and the import directories under
  system paths, each at its own path; not an editable install's source tree, and nothing else of
  the user's home or the project;
- the bootstrap's own directory (``moscopt/agent/tools``);
- the run's directory: ``main.py`` and ``stdin`` read-only, the work dir writable;
- fresh ``/proc`` (of its own PID namespace) and a read-only ``/dev`` (null, zero, urandom,
  tty, ...: writing to the devices works, creating files there does not).

and runs in new PID, network, IPC, UTS and cgroup namespaces, in a new session, killed if
moscopt dies. As root the child keeps only the capabilities the bootstrap needs to drop to its
unprivileged uid (setuid, setgid, chown); as any other user it runs in a new user namespace
with no capabilities and may not create further user namespaces.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from moscopt.agent.tools._isolation import interpreter_paths, is_root

_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_NAMESPACES = (
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
)
_ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN")
# The bootstrap and its sibling modules, with their bytecode cache (compiling them at every
# start would cost ~10 ms).
TOOLS_DIR = str(Path(__file__).resolve().parent)


def _parent_dirs(destinations: list[str], mounts: list[str]) -> list[str]:
    """``--dir`` arguments creating the ancestors of ``destinations`` traversable by anyone.

    bwrap would create them 0700 as root, which the sandbox uid could not pass; ancestors inside
    another mount already exist."""
    ancestors: set[str] = set()
    for dest in destinations:
        parent = os.path.dirname(dest)
        while parent not in ("/", ""):
            ancestors.add(parent)
            parent = os.path.dirname(parent)
    args: list[str] = []
    for path in sorted(ancestors):
        if not any(path == m or path.startswith(m + "/") for m in mounts):
            args += ["--perms", "0755", "--dir", path]
    return args


def _root_layout(run_base: str) -> list[str]:
    """bwrap arguments for the system part of the root (the same for every run)."""
    binds = [(os.path.realpath(p), p) for p in interpreter_paths() if not _under_usr(p)]
    binds.append((TOOLS_DIR, TOOLS_DIR))
    mounts = ["/usr", *(dest for _, dest in binds)]
    args = _parent_dirs([*mounts, os.path.join(run_base, "x")], mounts)
    args += ["--ro-bind", "/usr", "/usr"]
    for path in _SYSTEM_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    for source, dest in binds:
        args += ["--ro-bind", source, dest]
    return args


def _under_usr(path: str) -> bool:
    return path == "/usr" or path.startswith("/usr/")


@functools.cache
def _fixed_arguments(root: bool, run_parent: str) -> tuple[str, ...]:
    binary = shutil.which("bwrap")
    if binary is None:
        return ()
    if root:
        privileges = ["--cap-drop", "ALL"]
        for cap in _ROOT_CAPS:
            privileges += ["--cap-add", cap]
    else:
        privileges = ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    return (
        binary,
        *_NAMESPACES,
        *privileges,
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",  # the bootstrap is the namespace's init: it reports how the code died
        *_root_layout(run_parent),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    )


def command(base: Path, work: Path) -> list[str]:
    """The bwrap prefix for a run in ``base`` (with ``work`` inside), or ``[]`` without bwrap."""
    fixed = _fixed_arguments(is_root(), str(base.parent))
    if not fixed:
        return []
    run = ["--ro-bind", str(base), str(base), "--bind", str(work), str(work)]
    # --chdir base: as root the work dir already belongs to the sandbox uid, and without
    # CAP_DAC_OVERRIDE only that uid may enter it (the bootstrap does, once it has dropped).
    read_only = ["--remount-ro", "/dev", "--remount-ro", "/"]  # /dev/null stays writable
    return [*fixed, *run, "--chdir", str(base), *read_only, "--"]


@functools.cache
def available() -> bool:
    """Whether bwrap is installed and can start the interpreter here (probed once)."""
    if shutil.which("bwrap") is None:
        return False
    base = Path(tempfile.mkdtemp(prefix="moscopt-bwrap-probe-"))
    try:
        work = base / "work"
        work.mkdir()
        probe = "import os; assert os.getpid() == 1"
        result = subprocess.run(
            [*command(base, work), sys.executable, "-I", "-S", "-c", probe],
            capture_output=True,
            timeout=10,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return result.returncode == 0
