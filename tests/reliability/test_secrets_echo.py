"""A server (or proxy) that echoes the request's Authorization header inside normal answers
(issue 25, item 1): in clear, base64-encoded, reversed and upper-cased. A whole run (train,
eval, report, export) writes none of those forms to any file: the SQLite response cache,
events, results, reports and exports included."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.lm.cache import DB_FILE
from moscopt.lm.redact import secret_forms
from moscopt.testing.hostile_server import HostileServer, completion, response
from moscopt.testing.scripted import server_responder

from .helpers import common, train_args

runner = CliRunner()
KEY = "sk-ECHOED-MARKER-4b9d2e7a1c"


def echoing(body: dict[str, Any], headers: dict[str, str]) -> Any:
    """The scripted answers, with the Authorization header in four forms before every answer
    that is not JSON (agent answers, reflections): they still grade and parse as before."""
    answer = server_responder(body)
    auth = headers.get("authorization", "")
    if auth and not answer.lstrip().startswith("{"):
        forms = [auth, base64.b64encode(auth.encode()).decode(), auth[::-1], auth.upper()]
        answer = " ".join(forms) + "\n" + answer
    return response(completion(answer))


def needles() -> list[bytes]:
    folded, exact = secret_forms(KEY)
    out = [f.encode() for f in exact]
    for f in folded:
        out += [f.encode(), f.upper().encode(), f.lower().encode()]
    return out


def leaks(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            folded = data.lower()
            found += [f"{path}: {n[:16]!r}" for n in needles() if n in data or n.lower() in folded]
    return found


@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_an_echoed_key_reaches_no_file_in_any_form(
    project: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = project / "moscopt.yaml"
    config.write_text(config.read_text().replace("llm:\n", f"llm:\n  transport: {transport}\n"))
    with HostileServer(echoing) as server:
        steps = [
            train_args(server.url, epochs=1),
            ["eval", "--run", "runs/r1", "--split", "test", "--json"],
            ["eval", "--benchmark", "addition.yaml", *common(server.url), "--json"],
            ["report", "--run", "runs/r1"],
            ["export", "--mode", "static", "--run", "runs/r1"],
        ]
        for args in steps:
            result = runner.invoke(app, args)
            assert result.exit_code == 0, (args, result.output)
            assert KEY not in result.output
        assert server.requests and all(
            h.get("authorization") == f"Bearer {KEY}" for h in server.requests
        )
    assert list(project.rglob(DB_FILE))  # the shared response cache was written ...
    assert leaks(project) == [] and leaks(Path(os.environ["HOME"])) == []  # ... and is clean
