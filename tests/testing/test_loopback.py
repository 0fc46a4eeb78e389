"""The bench scripts' loopback kit: a server in its own process with a named responder, the sums
benchmark, and responders loaded from a module or a file."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from moscopt.benchmarks.registry import load_benchmark_file
from moscopt.testing.loopback import ServerProcess, load_responder, write_sums


def ask(url: str, text: str) -> str:
    body = {"model": "fake", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as r:
        return str(json.loads(r.read())["choices"][0]["message"]["content"])


def test_a_server_process_answers_with_its_responder_and_counts_calls(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(
        "def respond(body):\n    return 'echo: ' + body['messages'][-1]['content']\n"
    )
    with ServerProcess(responder=f"{tmp_path / 'echo.py'}:respond") as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        assert ask(server.url, "hi") == "echo: hi"
        assert ask(server.url, "again") == "echo: again"
        assert server.requests() == 2
        server.reset()
        assert server.requests() == 0
    assert server.proc.returncode == 0  # stopped when stdin closed


def test_responders_are_named_by_module_or_file(tmp_path: Path) -> None:
    from moscopt.testing.scripted import server_responder

    assert load_responder("moscopt.testing.scripted:server_responder") is server_responder
    (tmp_path / "mine.py").write_text("def answer(body):\n    return '42'\n")
    assert load_responder(f"{tmp_path / 'mine.py'}:answer")({}) == "42"
    with pytest.raises(ValueError, match="module:name"):
        load_responder("no-colon")


def test_the_sums_benchmark_loads_with_its_splits(tmp_path: Path) -> None:
    write_sums(tmp_path, 20, description="Additions", extra='answer_instructions: "Say it"\n')
    bench = load_benchmark_file(tmp_path / "sums.yaml")
    splits = bench.load(data=tmp_path / "sums.jsonl")
    assert (len(splits.train), len(splits.val), len(splits.test)) == (10, 5, 5)
    task = next(t for t in splits.train + splits.val + splits.test if t.id == "s3")
    assert "Compute 3 + 10." in task.prompt and "Say it" in task.prompt and task.gold == "13"
