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


def test_the_agent_world_answers_from_the_skills_in_the_folder_the_agent_names(
    tmp_path: Path,
) -> None:
    """`learn_world.agent_model` behind `body_responder`: the model reads the skills of the
    folder Codex (`<cwd>`, a Responses request) or Claude Code ("Primary working directory:", a
    Messages request) names, as `bench_harvest.py --world --agent` runs them."""
    from moscopt.testing.learn_world import RISKS_FIRST, RULE, STATUS_FIRST, agent_model

    def codex(cwd: Path) -> tuple[str, dict[str, Any]]:
        parts = [f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>", "Report"]
        content = [{"type": "input_text", "text": t} for t in parts]
        return "/v1/responses", {"input": [{"role": "user", "content": content}]}

    def claude(cwd: Path) -> tuple[str, dict[str, Any]]:
        system = f"# Environment\n - Primary working directory: {cwd}\n - Is a git repository"
        return "/v1/messages", {"system": system, "messages": [{"role": "user", "content": "R"}]}

    for folder in (".agents/skills/reports", ".claude/skills/reports"):
        (tmp_path / "with" / folder).mkdir(parents=True)
        (tmp_path / "with" / folder / "SKILL.md").write_text(f"---\nname: reports\n---\n{RULE}\n")
    (tmp_path / "without").mkdir()
    answers = []
    with AgentAPIServer(body_responder=agent_model) as server:
        for make in (codex, claude):
            for cwd in (tmp_path / "with", tmp_path / "without"):
                path, body = make(cwd)
                _, text = post(server.url + path, {"model": "m", "stream": True, **body})
                done = events(text)
                answers.append(
                    done[-1]["response"]["output"][0]["content"][0]["text"]
                    if path.endswith("responses")
                    else "".join(e["delta"].get("text", "") for e in done if "delta" in e)
                )
    assert answers == [RISKS_FIRST, STATUS_FIRST] * 2
