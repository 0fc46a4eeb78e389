"""`run_python` contains hostile code: each attack returns an error result, nothing escapes.

Pathological runs use short timeouts. Every test also checks that no child process is left
behind and that the run dir is removed.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from moscopt.agent.tools import _isolation
from moscopt.agent.tools.sandbox import output_kill_bytes, run_python

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _run_dir_removed(sandbox_tmp: Path) -> Iterator[None]:
    yield
    assert list(sandbox_tmp.iterdir()) == []


def test_infinite_loop_times_out() -> None:
    result = run_python("while True:\n    pass\n", timeout=1.0)
    assert result.timed_out
    assert result.exit_code is None
    assert result.killed_reason == "timeout"
    assert not result.ok


def test_partial_output_survives_a_timeout() -> None:
    result = run_python("print('started')\nwhile True:\n    pass\n", timeout=1.0)
    assert result.timed_out
    assert result.stdout == "started\n"


def test_sleeping_code_times_out_on_the_wall_clock() -> None:
    result = run_python("import time\ntime.sleep(60)", timeout=1.0)
    assert result.killed_reason == "timeout"


def test_cpu_limit_kills_before_the_wall_clock() -> None:
    result = run_python("while True:\n    pass\n", timeout=20.0, cpu_seconds=1)
    assert result.killed_reason == "cpu-time"
    assert not result.timed_out
    assert result.exit_code is None


@pytest.mark.parametrize(
    "code",
    [
        "import os\nwhile True:\n    os.fork()\n",
        "import os\nwhile True:\n    if os.fork() == 0:\n        os.execv('/bin/sh', ['sh'])\n",
        "import subprocess\nwhile True:\n    subprocess.Popen(['sleep', '100'])\n",
        "import os\nos.system('sleep 100 &')\n",
        "import os\nos.posix_spawn('/bin/sleep', ['sleep', '100'], {})\n",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()\n",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()\n",
    ],
    ids=[
        "fork",
        "fork-exec",
        "subprocess",
        "system",
        "posix_spawn",
        "multiprocessing",
        "posixsubprocess",
    ],
)
def test_process_spawning_is_blocked(code: str) -> None:
    result = run_python(code, timeout=2.0)
    assert not result.ok
    assert result.killed_reason is not None
    assert result.killed_reason.startswith("blocked: starting processes")
    assert "not allowed" in result.stderr


def test_pty_fork_fails() -> None:
    # pty.fork() swallows the refusal (an OSError) and fails on its own: no process either way.
    result = run_python("import pty\npid, fd = pty.fork()\nprint('forked', pid)", timeout=2.0)
    assert not result.ok
    assert "forked" not in result.stdout


def test_ten_gigabyte_allocation_is_a_memory_error() -> None:
    result = run_python("x = bytearray(10 * 1024**3)\nprint('allocated')", timeout=2.0)
    assert result.killed_reason == "memory"
    assert result.stdout == ""
    assert "MemoryError" in result.stderr


def test_growing_list_hits_the_memory_limit() -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(b'x' * 10**7)\n"
    result = run_python(code, timeout=5.0, memory_mb=256)
    assert result.killed_reason == "memory"


def test_caught_memory_error_is_not_a_failure() -> None:
    code = "try:\n    x = bytearray(10 * 1024**3)\nexcept MemoryError:\n    print('caught')\n"
    result = run_python(code, timeout=2.0)
    assert result.ok
    assert result.stdout == "caught\n"


def test_endless_output_is_cut_off() -> None:
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
    result = run_python(code, timeout=5.0, max_output=1000)
    assert result.killed_reason == "output-limit"
    assert result.exit_code is None
    assert not result.timed_out
    assert len(result.stdout) < 1100
    total = int(result.stdout.rsplit(": ", 1)[1].split()[0])
    assert output_kill_bytes(1000) < total <= output_kill_bytes(1000) + 65536


def test_endless_stderr_is_cut_off() -> None:
    code = "import sys\nwhile True:\n    print('e' * 1000, file=sys.stderr)\n"
    result = run_python(code, timeout=5.0, max_output=100)
    assert result.killed_reason == "output-limit"
    assert len(result.stderr) < 200


def _write_attempts(target: Path) -> list[str]:
    t = str(target)
    return [
        f"open({t!r}, 'w').write('pwned')",
        f"import os\nos.close(os.open({t!r}, os.O_WRONLY | os.O_CREAT))",
        f"import pathlib\npathlib.Path({t!r}).write_text('pwned')",
        f"import os\nos.symlink({t!r}, 'link')\nopen('link', 'w').write('pwned')",
        f"import os\nopen('f', 'w').write('pwned')\nos.rename('f', {t!r})",
        f"import shutil\nopen('f', 'w').write('pwned')\nshutil.copy('f', {t!r})",
        f"import os\nos.chdir({str(target.parent)!r})\nopen({target.name!r}, 'w').write('pwned')",
        f"import sqlite3\nsqlite3.connect({t!r}).execute('create table t (x)')",
    ]


@pytest.mark.parametrize("attempt", range(8))
@pytest.mark.parametrize("where", ["tmp", "repo", "home"])
def test_writing_outside_the_work_dir_is_blocked(attempt: int, where: str) -> None:
    name = f"moscopt-sandbox-escape-{uuid.uuid4().hex}"
    parent = {
        "tmp": Path("/tmp"),
        "repo": REPO,
        "home": Path(os.path.expanduser("~")),  # the test's temp HOME (see tests/conftest.py)
    }[where]
    target = parent / name
    try:
        result = run_python(_write_attempts(target)[attempt], timeout=2.0)
        assert not target.exists()
        assert not result.ok
        # Refused by the sandbox, or by the file system (as root, for a private dir; under
        # bubblewrap the directory is not there at all).
        blocked = (result.killed_reason or "").startswith("blocked:")
        assert blocked or "PermissionError" in result.stderr or "FileNotFoundError" in result.stderr
    finally:
        if target.exists() or target.is_symlink():
            target.unlink()


def test_secrets_in_the_environment_do_not_reach_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"secret-{uuid.uuid4().hex}"
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "HF_TOKEN",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "MY_SERVICE_SECRET",
        "HTTP_PROXY",
        "PASSWORD",
        "AUTHORIZATION",
        "PYTHONSTARTUP",
    ):
        monkeypatch.setenv(name, marker)
    code = (
        "import os, sys\n"
        "print(dict(os.environ))\n"
        "for pid in ('self', os.getppid(), 1):\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError as exc:\n"
        "        print('denied', type(exc).__name__)\n"
    )
    result = run_python(code, timeout=2.0)
    assert marker not in result.stdout
    assert marker not in result.stderr
    assert "denied" in result.stdout
    assert "OPENAI_API_KEY" not in result.stdout


def test_environment_is_an_allow_list() -> None:
    env = _isolation.scrubbed_environment(
        {
            "PATH": "/bin",
            "LANG": "C",
            "LC_ALL": "C",
            "OPENAI_API_KEY": "k",
            "HF_HOME": "/h",
            "AWS_REGION": "x",
            "SSH_AUTH_SOCK": "/s",
            "PYTHONPATH": "/p",
            "TZ": "UTC",
        },
        "/work",
    )
    assert env == {
        "PATH": "/bin",
        "LANG": "C",
        "LC_ALL": "C",
        "TZ": "UTC",
        "HOME": "/work",
        "TMPDIR": "/work",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_network_connection_is_refused() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.5)
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            "s = socket.socket()\n"
            "s.settimeout(1)\n"
            f"s.connect(('127.0.0.1', {port}))\n"
            "print('connected')\n"
        )
        result = run_python(code, timeout=3.0)
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.stdout == ""
    assert result.killed_reason == "blocked: network access (socket.connect)"


@pytest.mark.parametrize(
    "code",
    [
        "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=1)",
        "import socket\nsocket.getaddrinfo('example.com', 80)",
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.sendto(b'x', ('8.8.8.8', 53))",
        "import socket\nsocket.socket().bind(('0.0.0.0', 0))",
    ],
    ids=["urllib", "dns", "udp", "bind"],
)
def test_other_network_use_is_refused(code: str) -> None:
    result = run_python(code, timeout=3.0)
    assert not result.ok
    assert "network access" in (result.killed_reason or "")


def test_ctypes_cannot_call_foreign_functions() -> None:
    result = run_python("import ctypes\nctypes.CDLL(None).fork()", timeout=2.0)
    assert result.killed_reason == "blocked: ctypes (ctypes.dlsym)"


def test_ctypes_cannot_touch_raw_memory() -> None:
    result = run_python("import ctypes\nctypes.c_char.from_address(id(1))", timeout=2.0)
    assert result.killed_reason == "blocked: ctypes (ctypes.cdata)"


def test_limits_cannot_be_raised() -> None:
    code = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))"
    assert run_python(code, timeout=2.0).killed_reason == "blocked: resource.setrlimit"


def test_signalling_other_processes_is_blocked() -> None:
    result = run_python(f"import os, signal\nos.kill({os.getpid()}, signal.SIGTERM)")
    assert result.killed_reason is not None
    assert result.killed_reason.startswith("blocked: signalling")


def test_unremovable_work_dir_contents_are_still_cleaned_up() -> None:
    code = (
        "import os\n"
        "os.makedirs('a/b/c')\n"
        "open('a/b/c/f', 'w').write('x')\n"
        "for d in ('a/b/c', 'a/b', 'a'):\n"
        "    os.chmod(d, 0)\n"
        "os.chmod('.', 0o500)\n"
    )
    assert run_python(code, timeout=2.0).ok  # the fixture checks the run dir is gone


def test_files_outside_stay_unreadable_when_root() -> None:
    if not _isolation.is_root():
        pytest.skip("the uid drop applies only when moscopt runs as root")
    code = (
        "import os, resource\n"
        "print(os.getuid() != 0, os.getgid() != 0, os.getgroups())\n"
        "print(resource.getrlimit(resource.RLIMIT_NPROC))\n"
        "try:\n"
        "    os.listdir('/root')\n"
        "except PermissionError:\n"
        "    print('no /root')\n"
    )
    result = run_python(code, timeout=2.0, max_processes=7)
    assert result.stdout == "True True []\n(7, 7)\nno /root\n"


def test_namespaces_hide_the_host_when_available() -> None:
    if not _isolation.namespace_prefix():
        pytest.skip("unshare does not work on this host")
    code = "import os, socket\nprint(os.getpid(), [name for _, name in socket.if_nameindex()])"
    result = run_python(code, timeout=2.0)
    assert result.stdout == "2 ['lo']\n"  # PID 1 is the bootstrap's init; only loopback


def test_no_sandbox_process_survives_a_timeout(sandbox_survivors: Callable[[], list[int]]) -> None:
    # setsid() leaves the process group that the timeout kills; the PID namespace (or, without
    # one, the fact that the main process leads its group) still takes it down.
    code = "import os\ntry:\n    os.setsid()\nexcept OSError:\n    pass\nwhile True:\n    pass\n"
    result = run_python(code, timeout=1.0)
    assert result.killed_reason == "timeout"
    assert sandbox_survivors() == []
