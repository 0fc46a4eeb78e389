"""The sandbox end to end: model-written attacks as the agent's python tool call inside training.

The scripted model answers the first agent step of the run with an attack as its ```python tool
call; the trainer must run it in the sandbox, hand the model an error observation (or harmless
output), and carry on to a finished run. The tool-level attacks themselves are tested in
`tests/agent/tools/`; here the point is that they cannot stop or damage a training run.

What is prevented, and by which layer on which machine, is the table in
`moscopt/agent/tools/sandbox.py`; the attacks themselves, each kernel layer on its own, are
`tests/agent/tools/test_attacks*.py`. The modes here: the sandbox as this machine runs it
(bubblewrap where installed), and the fallback without bubblewrap and without namespaces
(Landlock, seccomp, the audit hook).
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from moscopt.agent.tools import PythonTool, python_tool, sandbox
from moscopt.lm.base import LMRequest
from moscopt.run.ledger_read import read_events
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeLM
from moscopt.testing.scripted import make_run, respond, train_run

SECRET = "sk-SANDBOX-MARKER-7d1f0c"
ESCAPE = Path("/tmp") / f"moscopt-escape-{uuid.uuid4().hex}"

# attack: (code, what the observation must contain)
ATTACKS = {
    "infinite-loop": ("while True:\n    pass", "[error: timed out"),
    "fork-bomb": ("import os\nwhile True:\n    os.fork()", "[error:"),
    "huge-allocation": ("x = bytearray(10 * 1024**3)\nprint(len(x))", "MemoryError"),
    # the sandbox ends the run ("[error: output-limit]"); the harness may cut the observation
    # before that line, so only its bound is checked below
    "huge-output": ("while True:\n    print('x' * 10000)", "xxxxxxxxxx"),
    "write-outside": (f"open({str(ESCAPE)!r}, 'w').write('escaped')", "[error: blocked: writing"),
    "secret-read": (
        "import os\nprint(sorted(os.environ))\n"
        "print(os.environ.get('OPENAI_API_KEY'), os.environ.get('ANTHROPIC_API_KEY'))",
        "None None",
    ),
    "network": (
        "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=2)",
        "[error: blocked: network",
    ),
}


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A loopback TCP listener that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=2)
    server.close()


@pytest.mark.parametrize("mode", ["as-available", "no-bwrap-no-namespaces"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_as_tool_call_is_contained_and_training_goes_on(
    tmp_path: Path,
    seed_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    listener: tuple[int, list[object]],
    attack: str,
    mode: str,
) -> None:
    port, accepted = listener
    code, expect = ATTACKS[attack]
    code = code.replace("PORT", str(port))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    if mode == "no-bwrap-no-namespaces":
        monkeypatch.setattr(sandbox, "_LAYERS", sandbox.Layers(bwrap=False, namespaces=False))
    # the harness's tool with a shorter wall clock than its 10 s default, to keep the test quick
    monkeypatch.setattr(
        python_tool, "PythonTool", lambda **kw: PythonTool(**{**kw, "timeout": 2.0})
    )

    attacked = threading.Event()
    observations: list[str] = []

    def responder(request: LMRequest) -> str:
        msgs = request.messages
        system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
        if "## Tool: python" not in system:
            return respond(request)
        if msgs[-1]["content"].startswith("Python output:"):
            observations.append(msgs[-1]["content"])
            return respond(SimpleNamespace(messages=msgs[:2]))  # type: ignore[arg-type]
        if not attacked.is_set():
            attacked.set()
            return f"Let me compute.\n```python\n{code}\n```"
        return respond(request)

    run, config, bench, sp, seeds = make_run(
        tmp_path,
        seed_dir,
        **{"training.epochs": 1, "agent.tools": ["python"], "agent.max_steps": 2},
    )
    lm = FakeLM(responder=responder)
    state = train_run(run, config, bench, sp, seeds, lm).state

    assert state.status == "done"
    assert len(observations) == 1, observations
    observation = observations[0]
    assert expect in observation, observation
    assert len(observation) < 20_000  # bounded whatever the code printed
    assert SECRET not in observation
    assert not ESCAPE.exists()
    assert accepted == []  # no connection reached the listener
    rollouts = read_events(RunDir.open(run.path).events.path, kinds={"rollout"})
    assert rollouts and all(r.error is None for r in rollouts)
