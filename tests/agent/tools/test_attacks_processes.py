"""The attack suite, part 2: model code goes after processes and resources: it signals its
parent and everything it can, fork-bombs, leaves a daemon behind, floods memory and output, and
reads the files of a sandbox running next to it (another task's hidden tests).

Same modes as part 1 (`ATTACK_MODES`); as there, the kernel-only modes run without the audit
hook. Contained means: moscopt (this test process) and a bystander process of the same user
survive, the call returns in bounded time, no process of the run is left, and the secrets of
the other sandbox do not show up.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from attack_helpers import observe

from moscopt.agent.tools.sandbox import run_python

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the launching user that the code must not be able to kill."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_the_parent_and_other_processes_cannot_be_signalled(
    attack_mode: str, bystander: subprocess.Popen[bytes], sandbox_tmp: Path
) -> None:
    import os

    targets = {
        "pidfd-parent": "signal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGKILL)",
        "kill-parent": "os.kill(os.getppid(), signal.SIGKILL)",
        "kill-moscopt": f"os.kill({os.getpid()}, signal.SIGKILL)",
        "kill-bystander": f"os.kill({bystander.pid}, signal.SIGKILL)",
        "kill-everything": "os.kill(-1, signal.SIGKILL)",
    }
    code = "import os, signal\n" + "".join(
        f"try:\n    {call}\n    print({name!r}, 'sent')\nexcept Exception as exc:\n"
        f"    print({name!r}, type(exc).__name__)\n"
        for name, call in targets.items()
    )
    seen = observe(code)
    time.sleep(0.1)
    assert bystander.poll() is None, seen  # still running (and so is this test process)
    for name in ("kill-moscopt", "kill-bystander"):
        assert f"{name} sent" not in seen, seen


FORK_BOMB = (
    "import os, time\n"
    "for _ in range(10000):\n"
    "    try:\n        os.fork()\n"
    "    except OSError as exc:\n"
    "        print('fork refused:', type(exc).__name__)\n        break\n"
    "time.sleep(0.3)\n"
)


def test_a_fork_bomb_is_bounded(
    attack_mode: str, sandbox_survivors: Callable[[], list[int]]
) -> None:
    started = time.monotonic()
    result = run_python(FORK_BOMB, timeout=5.0, max_processes=16)
    assert time.monotonic() - started < 15
    # Every process that got to run says so once: never more than the process limit.
    assert 1 <= result.stdout.count("fork refused") <= 16, result.stdout[-500:]
    assert sandbox_survivors() == []
    subprocess.run(["true"], check=True)  # the machine can still start processes


def test_a_daemon_does_not_outlive_the_call(
    attack_mode: str, sandbox_survivors: Callable[[], list[int]]
) -> None:
    code = (
        "import os, time\n"
        "try:\n    pid = os.fork()\nexcept OSError as exc:\n"
        "    print('no fork:', type(exc).__name__)\n    raise SystemExit\n"
        "if pid == 0:\n    os.setsid()\n"
        "    try:\n        if os.fork() == 0:\n            time.sleep(30)\n"
        "    finally:\n        os._exit(0)\n"
        "print('daemon started')\n"
    )
    run_python(code, timeout=3.0)
    time.sleep(0.2)
    assert sandbox_survivors() == []


def test_a_memory_flood_is_stopped(attack_mode: str) -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))\n"
    result = run_python(code, timeout=10.0, memory_mb=512)
    assert result.killed_reason == "memory", result.stderr[-300:]


def test_an_output_flood_is_cut_off(attack_mode: str) -> None:
    seen = observe("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", timeout=10.0)
    assert len(seen) < 10_000
    assert "[error: output-limit]" in seen


def test_a_sandbox_cannot_read_a_concurrent_one(attack_mode: str, sandbox_tmp: Path) -> None:
    hidden = f"hidden-tests-{uuid.uuid4().hex}"
    victim_started = threading.Event()
    victim: list[str] = []

    def run_victim() -> None:
        code = "import time\nopen('started', 'w').close()\ntime.sleep(4)\n"
        victim_started.set()
        result = run_python(code, timeout=6.0, files={"hidden_tests.py": hidden})
        victim.append(result.stdout)

    thread = threading.Thread(target=run_victim)
    thread.start()
    victim_started.wait()
    deadline = time.monotonic() + 5
    while not list(sandbox_tmp.glob("*/work/started")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(sandbox_tmp.glob("*/work/started")), "the victim sandbox did not start"
    code = (
        "import glob\nfound = []\n"
        f"for pattern in ({str(sandbox_tmp)!r} + '/*/work/*', '/tmp/moscopt-*/*/work/*'):\n"
        "    for path in glob.glob(pattern):\n"
        "        try:\n            found.append(open(path).read())\n"
        "        except OSError as exc:\n            found.append(type(exc).__name__)\n"
        "print(found)\n"
    )
    seen = observe(code)
    thread.join()
    assert hidden not in seen, seen
