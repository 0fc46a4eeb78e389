"""The in-child bootstrap's pieces, tested directly: the audit hook, Landlock, the status lines.

The audit hook is called as a plain function here (installing it would be irreversible).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moscopt.agent.tools import _bootstrap, _isolation, _kernel
from moscopt.agent.tools._capture import _parse_status
from moscopt.agent.tools._hook import SandboxViolation, make_audit_hook


@pytest.fixture
def hook_in(tmp_path: Path) -> tuple[Path, Path]:
    work = tmp_path / "work"
    home = tmp_path / "home"
    (home / "python").mkdir(parents=True)
    work.mkdir()
    return work, home


def _hook(work: Path, home: Path) -> Callable[[str, tuple[Any, ...]], None]:
    return make_audit_hook(str(work), [str(home)], [str(home / "python")])


@pytest.mark.parametrize(
    ("event", "args"),
    [
        ("open", ("{work}/out.txt", "w", 0)),
        ("open", ("{work}/sub/new.bin", None, os.O_WRONLY | os.O_CREAT)),
        ("open", ("/etc/hostname", "r", 0)),
        ("open", ("/dev/null", "w", 0)),
        ("open", ("/dev/stdout", "a", 0)),
        ("open", (3, "w", 0)),
        ("open", ("{home}/python/lib/os.py", "rb", 0)),
        ("open", ("/proc/self/status", "r", 0)),
        ("os.mkdir", ("{work}/d", 0o777, None)),
        ("os.rename", ("{work}/a", "{work}/b", None, None)),
        ("os.remove", ("{work}/a", None)),
        ("sqlite3.connect", (":memory:",)),
        ("os.kill", (0, 0)),
        ("ctypes.dlopen", (None,)),
        ("import", ("math", None, [], None, None)),
        ("compile", (b"", "<x>")),
    ],
)
def test_hook_allows(hook_in: tuple[Path, Path], event: str, args: tuple[object, ...]) -> None:
    work, home = hook_in
    filled = tuple(a.format(work=work, home=home) if isinstance(a, str) else a for a in args)
    assert _hook(work, home)(event, filled) is None


@pytest.mark.parametrize(
    ("event", "args"),
    [
        ("open", ("/tmp/x", "w", 0)),
        ("open", ("/tmp/x", None, os.O_RDWR)),
        ("open", ("{work}/../escape", "a", 0)),
        ("open", ("{home}/.netrc", "r", 0)),
        ("open", ("/proc/1/environ", "rb", 0)),
        ("open", ("/tmp", None, os.O_RDONLY)),
        ("os.mkdir", ("/tmp/d", 0o777, None)),
        ("os.rename", ("{work}/a", "/tmp/b", None, None)),
        ("os.symlink", ("/etc", "{work}/l", None)),
        ("os.chmod", ("/etc/passwd", 0o777, None)),
        ("sqlite3.connect", ("/tmp/db",)),
        ("os.fork", ()),
        ("os.exec", ("/bin/sh", ["sh"], None)),
        ("os.posix_spawn", ("/bin/sh", ["sh"], {})),
        ("subprocess.Popen", ("sh", ["sh"], None, None)),
        ("os.system", (b"ls",)),
        ("socket.connect", (None, ("1.1.1.1", 80))),
        ("socket.getaddrinfo", ("example.com", 80, 0, 0, 0)),
        ("ctypes.dlopen", ("libc.so.6",)),
        ("ctypes.call_function", (0, ())),
        ("os.kill", (12345, 9)),
        ("resource.setrlimit", (0, (1, 1))),
        ("import", ("_posixsubprocess", None, [], None, None)),
        ("sqlite3.connect", ("file:/etc/passwd?mode=ro",)),
        ("sqlite3.enable_load_extension", (None, True)),
        ("sqlite3.load_extension", (None, "/tmp/x.so")),
        ("sys.addaudithook", ()),
    ],
)
def test_hook_refuses(hook_in: tuple[Path, Path], event: str, args: tuple[object, ...]) -> None:
    work, home = hook_in
    filled = tuple(a.format(work=work, home=home) if isinstance(a, str) else a for a in args)
    with pytest.raises(SandboxViolation, match="not allowed"):
        _hook(work, home)(event, filled)


def test_hook_resolves_symlinks_out_of_the_work_dir(hook_in: tuple[Path, Path]) -> None:
    work, home = hook_in
    (work / "link").symlink_to("/tmp")
    with pytest.raises(SandboxViolation):
        _hook(work, home)("open", (str(work / "link" / "x"), "w", 0))


def test_hook_resolves_dir_fd_relative_paths(hook_in: tuple[Path, Path]) -> None:
    work, home = hook_in
    fd = os.open("/tmp", os.O_RDONLY)
    try:
        with pytest.raises(SandboxViolation):
            _hook(work, home)("os.remove", ("victim", fd))
    finally:
        os.close(fd)


@given(st.text(max_size=200))
def test_status_lines_round_trip(value: str) -> None:
    read, write = os.pipe()
    try:
        _bootstrap._report(write, "reason", value)
        os.close(write)
        raw = os.read(read, 1 << 20)
    finally:
        os.close(read)
    assert _parse_status(raw) == [("reason", value)]


def _landlock_script(work: Path, secret: Path, target: Path) -> str:
    return textwrap.dedent(
        f"""
        import importlib.util, os, socket, sys
        spec = importlib.util.spec_from_file_location("k", {str(Path(_kernel.__file__))!r})
        kernel = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kernel)
        applied = kernel.apply_landlock({str(work)!r}, {_isolation.read_paths()!r}, [])
        if not applied:
            print("unavailable")
            sys.exit(0)
        open({str(work / "ok.txt")!r}, "w").write("fine")
        import json  # the standard library stays importable
        outcomes = []
        for attempt in (
            lambda: open({str(target)!r}, "w"),
            lambda: open({str(secret)!r}).read(),
            lambda: os.listdir({str(secret.parent)!r}),
            lambda: os.execv("/bin/true", ["true"]),
            lambda: socket.create_connection(("127.0.0.1", 9), timeout=1),
        ):
            try:
                attempt()
                outcomes.append("allowed")
            except PermissionError:
                outcomes.append("denied")
            except OSError as exc:
                outcomes.append(type(exc).__name__)
        print(" ".join(applied))
        print(" ".join(outcomes))
        """
    )


def test_landlock_confines_reads_writes_exec_and_tcp_without_the_audit_hook(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY")
    target = Path("/tmp") / f"moscopt-landlock-{uuid.uuid4().hex}"
    script = _landlock_script(work, secret, target)
    try:
        result = subprocess.run(
            [sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=30
        )
    finally:
        if target.exists():
            target.unlink()
    assert result.returncode == 0, result.stderr
    if result.stdout.strip() == "unavailable":
        pytest.skip("Landlock is not available on this kernel")
    applied, outcomes = result.stdout.splitlines()
    assert (work / "ok.txt").read_text() == "fine"
    assert not target.exists()
    assert "landlock:no-exec" in applied
    assert any(name.endswith(":fs-read") for name in applied.split())
    write, read, listing, execute, tcp = outcomes.split()
    assert (write, read, listing, execute) == ("denied", "denied", "denied", "denied")
    if "landlock:no-tcp" in applied:
        assert tcp == "denied"


def test_seccomp_program_is_well_formed() -> None:
    program = _kernel.seccomp_program("x86_64", 1234, net_namespace=True)
    assert program is not None
    assert all(0 <= jt <= 255 and 0 <= jf <= 255 for _, jt, jf, _ in program)
    # every jump lands inside the program, and it ends with a return
    ret = 0x06
    jumps = [(i, jt, jf) for i, (code, jt, jf, _) in enumerate(program) if code != ret]
    assert all(i + 1 + max(jt, jf) < len(program) for i, jt, jf in jumps)
    assert program[-1][0] == ret
    assert _kernel.seccomp_program("sparc", 1) is None
