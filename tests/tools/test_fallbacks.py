"""The sandbox still contains the main attacks when the stronger layers are missing.

Each mode switches layers off to emulate a host without them: no namespaces (no ``unshare``),
and the weakest case, only rlimits and the audit hook (no namespaces, no Landlock, no uid drop).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from moscopt.tools import _isolation, sandbox
from moscopt.tools.sandbox import run_python

pytestmark = pytest.mark.usefixtures("no_leftover_processes", "sandbox_tmp")


@pytest.fixture(params=["no-namespaces", "hook-only"])
def weakened(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(_isolation, "namespace_prefix", lambda: ())
    if request.param == "hook-only":
        monkeypatch.setattr(sandbox, "_USE_LANDLOCK", False)
        monkeypatch.setattr(_isolation, "sandbox_identity", lambda: None)
    yield request.param


def test_normal_code_still_works(weakened: str) -> None:
    result = run_python("import sys, math\nprint(math.factorial(5), sys.stdin.read())", stdin="in")
    assert result.stdout == "120 in\n"
    assert result.ok


def test_loop_times_out(weakened: str) -> None:
    result = run_python("while True:\n    pass", timeout=1.0)
    assert result.killed_reason == "timeout"


def test_fork_bomb_is_blocked(weakened: str) -> None:
    result = run_python("import os\nwhile True:\n    os.fork()", timeout=2.0)
    assert result.killed_reason == "blocked: starting processes (os.fork)"


def test_allocation_is_limited(weakened: str) -> None:
    assert run_python("x = bytearray(10 * 1024**3)", timeout=2.0).killed_reason == "memory"


def test_output_flood_is_cut_off(weakened: str) -> None:
    code = "while True:\n    print('x' * 10000)"
    assert run_python(code, timeout=5.0).killed_reason == "output-limit"


def test_write_to_tmp_is_blocked(weakened: str) -> None:
    target = Path("/tmp") / f"moscopt-fallback-{uuid.uuid4().hex}"
    try:
        result = run_python(f"open({str(target)!r}, 'w').write('x')", timeout=2.0)
        assert not target.exists()
        assert (result.killed_reason or "").startswith("blocked: writing")
    finally:
        if target.exists():
            target.unlink()


def test_loopback_connection_is_blocked(weakened: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.3)
        port = server.getsockname()[1]
        code = f"import socket\nsocket.socket().connect(('127.0.0.1', {port}))"
        result = run_python(code, timeout=2.0)
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.killed_reason == "blocked: network access (socket.connect)"


def test_secrets_are_scrubbed(weakened: str, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", marker)
    result = run_python(f"import os\nprint({marker!r} in str(os.environ))")
    assert result.stdout == "False\n"


def test_sweep_kills_processes_of_a_sandbox_uid() -> None:
    if not _isolation.is_root():
        pytest.skip("needs root to start a process under another uid")
    uid = 1_999_999_000 + os.getpid() % 1000
    proc = subprocess.Popen(["sleep", "30"], user=uid, group=uid, extra_groups=[])
    try:
        assert _isolation.kill_processes_of(uid) == 1
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_no_process_survives_a_timeout(
    weakened: str, sandbox_survivors: Callable[[], list[int]]
) -> None:
    code = "import os\ntry:\n    os.setsid()\nexcept OSError:\n    pass\nwhile True:\n    pass\n"
    assert run_python(code, timeout=1.0).killed_reason == "timeout"
    assert sandbox_survivors() == []
