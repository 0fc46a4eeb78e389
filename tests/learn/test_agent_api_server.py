"""The loopback server the real CLIs were recorded against (scripts/record_sessions.py)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from moscopt.testing.agent_api_server import AgentAPIServer, last_user_text


def post(url: str, body: dict[str, Any]) -> tuple[str, str]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read().decode()


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_it_speaks_anthropic_messages_and_openai_responses_streams() -> None:
    with AgentAPIServer(lambda said: f"you said: {said}") as server:
        kind, text = post(
            server.url + "/v1/messages",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                {"type": "text", "text": "hello"}]}]},
        )  # fmt: skip
        assert kind == "text/event-stream"
        got = events(text)
        assert got[0]["type"] == "message_start" and got[-1]["type"] == "message_stop"
        assert got[2]["delta"] == {"type": "text_delta", "text": "you said: hello"}
        _, text = post(
            server.url + "/v1/responses",
            {"model": "m", "stream": True, "input": [{"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "hi codex"}]}]},
        )  # fmt: skip
        done = events(text)[-1]
        assert done["type"] == "response.completed"
        assert done["response"]["output"][0]["content"][0]["text"] == "you said: hi codex"
        assert server.secrets_seen(["hi codex", "never-sent"]) == ["hi codex"]
        assert [path for path, _ in server.requests] == ["/v1/messages", "/v1/responses"]


def test_last_user_text_skips_inserted_blocks() -> None:
    body = {"input": [{"role": "user", "content": "first"}, {"role": "user", "content": "<env/>"}]}
    assert last_user_text(body) == "first"


def test_the_codex_world_answers_from_the_skills_in_the_folder_codex_names(tmp_path: Path) -> None:
    """`learn_world.codex_agent` behind `body_responder`: the model reads the skills of the
    `<cwd>` Codex's environment context names (as `bench_harvest.py --world --agent` runs it)."""
    from moscopt.testing.learn_world import RISKS_FIRST, RULE, STATUS_FIRST, codex_agent

    def request(cwd: Path) -> dict[str, Any]:
        context = f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
        parts = [context, "Write a report on billing"]
        content = [{"type": "input_text", "text": t} for t in parts]
        return {"model": "m", "input": [{"type": "message", "role": "user", "content": content}]}

    skill = tmp_path / "with" / ".agents" / "skills" / "reports"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: reports\ndescription: d\n---\n{RULE}\n")
    (tmp_path / "without").mkdir()
    with AgentAPIServer(body_responder=codex_agent) as server:
        answers = []
        for cwd in (tmp_path / "with", tmp_path / "without"):
            _, text = post(server.url + "/v1/responses", request(cwd))
            answers.append(events(text)[-1]["response"]["output"][0]["content"][0]["text"])
    assert answers == [RISKS_FIRST, STATUS_FIRST]
