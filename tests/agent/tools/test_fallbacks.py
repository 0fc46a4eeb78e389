"""The sandbox still contains the main attacks when the stronger layers are missing.

Each mode switches layers off to emulate a host without them: no bubblewrap (Landlock and
``unshare`` namespaces), no bubblewrap and no namespaces (Landlock alone), and a host with no
kernel isolation for reads at all, where the code runs only when the caller opts in
(``allow_unsandboxed``) and then has rlimits, seccomp and the audit hook only.
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

from moscopt.agent.tools import _isolation, sandbox
from moscopt.agent.tools.sandbox import UNSANDBOXED_REFUSED, ExecResult, Layers

pytestmark = pytest.mark.usefixtures("no_leftover_processes", "sandbox_tmp")
MODES = {
    "no-bwrap": Layers(bwrap=False),
    "landlock-only": Layers(bwrap=False, namespaces=False),
    "unsandboxed": Layers(bwrap=False, namespaces=False, landlock=False, uid_drop=False),
}


@pytest.fixture(params=sorted(MODES))
def weakened(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(sandbox, "_LAYERS", MODES[request.param])
    yield request.param


def run_python(code: str, **kwargs: object) -> ExecResult:
    return sandbox.run_python(code, allow_unsandboxed=True, **kwargs)  # type: ignore[arg-type]


def test_normal_code_still_works(weakened: str) -> None:
    result = run_python("import sys, math\nprint(math.factorial(5), sys.stdin.read())", stdin="in")
    assert result.stdout == "120 in\n"
    assert result.ok
    landlock = weakened != "unsandboxed" and _isolation.landlock_abi() >= 1
    assert result.isolation == ("landlock" if landlock else "unsandboxed")


def test_without_read_isolation_the_code_does_not_run_unless_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "_LAYERS", MODES["unsandboxed"])
    assert sandbox.isolation_available() == "unsandboxed"
    result = sandbox.run_python("print('ran')")
    assert result.stdout == ""
    assert result.killed_reason == UNSANDBOXED_REFUSED
    assert result.exit_code is None
    assert not result.ok
    allowed = sandbox.run_python("print('ran')", allow_unsandboxed=True)
    assert allowed.stdout == "ran\n"
    assert allowed.isolation == "unsandboxed"


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
    # The audit hook says so, or seccomp refuses the socket first (no network namespace).
    reason = result.killed_reason or ""
    assert reason == "blocked: network access (socket.connect)" or (
        "PermissionError: [Errno 1]" in result.stderr
    )


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
