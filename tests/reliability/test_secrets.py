"""API keys never reach the disk: train, status, eval and export with marker keys in the
environment, then every byte under the project (runs, cache, exports) and the user-level
directories (HOME, caches) is searched for the markers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import common, train_args

runner = CliRunner()
MARKERS = {
    "OPENAI_API_KEY": "sk-OPENAI-MARKER-5f2a9c3e",
    "ANTHROPIC_API_KEY": "sk-ant-ANTHROPIC-MARKER-81be",
    "HOSTED_VLLM_API_KEY": "VLLM-MARKER-c0ffee",
}


def leaks(root: Path) -> list[str]:
    """Files under `root` whose bytes contain a marker (also UTF-16, as some tools write it)."""
    found = []
    needles = [m.encode() for m in MARKERS.values()]
    needles += [m.encode("utf-16-le") for m in MARKERS.values()]
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {n[:12]!r}" for n in needles if n in data]
    return found


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_api_keys_never_reach_any_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    for name, value in MARKERS.items():
        monkeypatch.setenv(name, value)
    config = project / "moscopt.yaml"
    config.write_text(config.read_text().replace("llm:\n", f"llm:\n  transport: {transport}\n"))
    ran: list[str] = []
    with FakeServer(responder=server_responder) as server:
        steps = {
            "train": train_args(server.url, epochs=1, evolution=True),
            "status": ["status", "--run", "runs/r1", "--json"],
            "eval-run": ["eval", "--run", "runs/r1", "--split", "test", "--json"],
            "eval-none": ["eval", "--benchmark", "addition.yaml", *common(server.url), "--json"],
        }
        for name, args in steps.items():
            result = runner.invoke(app, args)
            assert result.exit_code == 0, f"{name}: {result.output}"
            assert not any(m in result.output for m in MARKERS.values())
            ran.append(name)
        for mode in ("mixture", "static", "distilled"):
            args = ["export", "--mode", mode, "--run", "runs/r1", "--api-base", server.url]
            result = runner.invoke(app, args)
            # the export command may be unavailable or refuse this tiny run; any file it wrote
            # is still searched below, and its output must not show a key either
            assert result.exit_code in (0, 1, 2), result.output
            assert not any(m in result.output for m in MARKERS.values())
            if result.exit_code == 0:
                ran.append(f"export-{mode}")
        assert server.count() > 0 and all(r.authorized for r in server.log)  # keys were used
    assert {"train", "status", "eval-run", "eval-none"} <= set(ran)
    assert (project / "runs/r1/cache").is_dir()
    home = Path(os.environ["HOME"])
    assert leaks(project) == [] and leaks(home) == []
