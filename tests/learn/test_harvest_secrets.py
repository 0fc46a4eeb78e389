"""Secrets planted in real transcripts (keys in tool output, `.env` contents, tokens in URLs,
secret environment variables) never reach the task file or an outgoing request."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.learn.secrets import clean
from moscopt.testing import FakeServer

runner = CliRunner()
PROJECT = "/home/user/project"
ENV_SECRET = "envSecret9876ValueXYZ"  # the value of a secret environment variable
PLANTED = {
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "dotenv": "s3cr3t-db-passw0rd",
    "url_token": "tok_9f8e7d6c5b4a",
    "url_password": "hunter2pass",
    "anthropic": "sk-ant-api03-abcdefghijklmnop1234",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
    "env": ENV_SECRET,
}
LEAKY = (
    f"the build says: using key {PLANTED['aws']} and {PLANTED['github']}\n"
    f"cat .env\nDB_PASSWORD={PLANTED['dotenv']}\nANTHROPIC_API_KEY={PLANTED['anthropic']}\n"
    f"fetch https://api.example.com/v1/items?token={PLANTED['url_token']}&page=2\n"
    f"clone https://bob:{PLANTED['url_password']}@git.example.com/repo.git\n"
    f"Authorization: Bearer {PLANTED['jwt']}\nmy deploy var is {ENV_SECRET}"
)


REQUEST = "Fix the login page:\n"


def _line(obj: dict[str, object]) -> str:
    return json.dumps(obj) + "\n"


def plant_claude(src: Path, dst: Path) -> None:
    """The real Claude Code transcripts, with a request, a tool result and a correction that
    carry the secrets appended to each."""
    shutil.copytree(src, dst)
    for f in dst.rglob("*.jsonl"):
        first = json.loads(f.read_text().splitlines()[2])
        base = {k: first[k] for k in ("sessionId", "cwd", "version", "timestamp")}
        records = [
            {**base, "type": "user", "message": {"role": "user", "content": REQUEST + LEAKY}},
            {**base, "type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "cat .env"}}]}},
            {**base, "type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": LEAKY}]}},
            {**base, "type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "Done: " + LEAKY}]}},
            {**base, "type": "user", "message": {"role": "user",
                "content": "no — never put the key in code. " + LEAKY}},
        ]  # fmt: skip
        with f.open("a") as out:
            out.writelines(_line(r) for r in records)


def plant_codex(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)
    for f in dst.rglob("*.jsonl"):
        ts = "2026-12-06T06:11:20.000Z"
        items = [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Rotate the staging credentials\n" + LEAKY}]},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
            {"type": "function_call_output", "call_id": "c1", "output": LEAKY},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Rotated: " + LEAKY}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "that's wrong. Never print tokens. " + LEAKY}]},
        ]  # fmt: skip
        with f.open("a") as out:
            out.writelines(
                _line({"timestamp": ts, "type": "response_item", "payload": p}) for p in items
            )


@pytest.fixture
def planted(sessions_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("DEPLOY_TOKEN", ENV_SECRET)
    plant_claude(sessions_dir / "claude-code", tmp_path / "claude-code")
    plant_codex(sessions_dir / "codex", tmp_path / "codex")
    return {"claude-code": tmp_path / "claude-code", "codex": tmp_path / "codex"}


def leaked(text: str) -> list[str]:
    return [name for name, value in PLANTED.items() if value in text]


def test_the_scrubber_masks_every_planted_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", ENV_SECRET)
    assert leaked(LEAKY) == list(PLANTED)  # the test plants what it says
    assert leaked(clean(LEAKY, 100_000)) == []
    kept = "commit 3f2a9c1e0b7d4a5f6e8c9b0a1d2e3f4a5b6c7d8e, DEBUG=true, PORT=8080"
    assert clean(kept, 1000) == kept  # hashes and harmless settings survive


@pytest.mark.parametrize("source", ["claude-code", "codex"])
def test_planted_secrets_never_reach_the_task_files(
    planted: dict[str, Path], tmp_path: Path, source: str
) -> None:
    out = tmp_path / "tasks.jsonl"
    args = ["harvest", "--source", source, "--path", str(planted[source]), "--project", PROJECT]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = out.read_text() + out.with_name("tasks.heldout.jsonl").read_text()
    assert "Rotate the staging" in written or "Fix the login page" in written  # mined
    assert leaked(written) == [] and leaked(result.output) == []


def test_planted_secrets_never_reach_the_mining_model(
    planted: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "moscopt.yaml").write_text("seed: 0\n")  # a project: its cache is in tmp_path
    answer = {"keep": True, "checks": [], "criteria": ["Never prints tokens."]}
    with FakeServer(responder=lambda body: json.dumps(answer)) as server:
        out = tmp_path / "tasks.jsonl"
        result = runner.invoke(
            app,
            ["harvest", "--source", "codex", "--path", str(planted["codex"]), "--project", PROJECT,
             "-o", str(out), "--model", "openai/loopback", "--api-base", server.url + "/v1"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        bodies = [json.dumps(r.body) for r in server.log]
    assert bodies and "Rotate the staging credentials" in "".join(bodies)
    assert leaked("".join(bodies)) == []
    assert "model:openai/loopback" in result.output
    written = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and not any(p.is_relative_to(d) for d in planted.values())
    ]
    assert any(".moscopt" in p.parts for p in written)  # the response cache is among them
    text = "".join(p.read_text(errors="replace") for p in written)
    assert leaked(text) == []  # nor the task files, nor the response cache
