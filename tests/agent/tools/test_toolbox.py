"""Tools natively (function definitions out, tool calls back) where the model supports them,
the text protocol otherwise; the LM layer's additive tool-call fields; bounded results."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from moscopt.agent.skill_agent import SkillAgent
from moscopt.agent.tools import python_tool
from moscopt.agent.tools.toolbox import ToolBox, ToolOptions
from moscopt.benchmarks import Task, get_benchmark
from moscopt.lm.base import Completion, LMRequest, Message, ToolCall, ToolCallingLM, ToolRequest
from moscopt.lm.cache import ResponseCache
from moscopt.lm.client import LiteLLMClient
from moscopt.lm.wire import RawAnswer, chat_body, raw_answer
from moscopt.testing import FakeLM

TASK = Task("t1", "offline", "Compute 6 * 7.\n\nEnd with FINAL ANSWER: <n>", "42")


class FakeToolLM(FakeLM):
    """A FakeLM that takes native tools: its first reply to a request with tools is a call."""

    def __init__(self, calls: Sequence[ToolCall], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = list(calls)
        self.tools_seen: list[Any] = []

    async def supports_tools(self) -> bool:
        return True

    async def acomplete(  # type: ignore[override]
        self, messages: Sequence[Message], *, tools: Any = None, **kwargs: Any
    ) -> Completion:
        self.tools_seen.append(tools)
        completion = self.complete(messages, **kwargs)
        if tools and self.calls:
            return Completion("", completion.model, tool_calls=(self.calls.pop(0),))
        return completion


def test_native_calls_run_the_tool_and_the_result_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(python_tool, "PythonTool", lambda **_: lambda code: f"ran: {code}\n42")
    lm = FakeToolLM(
        [ToolCall("c1", "python", '{"code": "print(6 * 7)"}')],
        routes={"agent": lambda r: "FINAL ANSWER: 42"},
    )
    assert isinstance(lm, ToolCallingLM)
    bench = get_benchmark("offline")
    rollout = asyncio.run(SkillAgent(lm, bench, None, tools=("python",), max_steps=3).run(TASK))
    assert rollout.reward == 1.0
    definitions = lm.tools_seen[0]
    assert definitions[0]["function"]["name"] == "python"
    assert definitions[0]["function"]["parameters"]["required"] == ["code"]
    assert "[tool call python]\nprint(6 * 7)" in rollout.messages[2]["content"]
    assert rollout.messages[3]["content"] == "Python output:\nran: print(6 * 7)\n42"
    assert "## Tools" in rollout.messages[0]["content"]  # no code-block protocol natively


def test_bad_native_arguments_and_unknown_tools_are_observations() -> None:
    box = ToolBox(("python",), native=True)
    bad = box.parse("", [ToolCall("c", "python", "{not json")])
    assert bad is not None and box.run(bad) == ("[error: the call's arguments are not JSON]", True)
    unknown = box.parse("", [ToolCall("c", "rm", "{}")])
    assert unknown is not None and box.run(unknown)[1]
    missing = box.parse("", [ToolCall("c", "python", '{"src": "x"}')])
    assert missing is not None and "needs a string argument 'code'" in box.run(missing)[0]


def test_models_without_function_calling_get_the_text_protocol(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(python_tool, "PythonTool", lambda **_: lambda code: "42")
    replies = iter(["```python\nprint(6 * 7)\n```", "FINAL ANSWER: 42"])
    lm = FakeLM(routes={"agent": lambda r: next(replies)})
    bench = get_benchmark("offline")
    rollout = asyncio.run(SkillAgent(lm, bench, None, tools=("python",), max_steps=3).run(TASK))
    assert rollout.reward == 1.0
    assert "## Tool: python" in rollout.messages[0]["content"]
    assert rollout.messages[3]["content"] == "Python output:\n42"


def test_text_protocol_parsing() -> None:
    box = ToolBox(("python", "shell"))
    call = box.parse("First:\n```bash\nls -l\n```\nthen\n```python\nprint(1)\n```")
    assert call is not None and (call.tool, call.input) == ("python", "print(1)")
    assert box.parse("```search\nq\n```") is None  # search is not one of its tools
    assert box.parse("```python\nprint(1)\n```\nFINAL ANSWER: 3") is None  # a final answer


def test_tool_results_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_tool, "PythonTool", lambda **_: lambda code: "x" * 50_000)
    replies = iter(["```python\nprint('x' * 50000)\n```", "FINAL ANSWER: 42"])
    lm = FakeLM(routes={"agent": lambda r: next(replies)})
    agent = SkillAgent(lm, get_benchmark("offline"), None, tools=("python",), max_steps=3)
    agent.tool_options = ToolOptions(max_chars=1000)
    rollout = asyncio.run(agent.run(TASK))
    assert len(rollout.messages[3]["content"]) <= 1000 + len("Python output:\n")


# -- the LM layer ---------------------------------------------------------------------------


def test_the_wire_sends_tools_and_reads_tool_calls() -> None:
    plain = LMRequest("m", ({"role": "user", "content": "x"},), 0.0, 1.0, 10)
    tool = {"type": "function", "function": {"name": "python", "parameters": {}}}
    with_tools = ToolRequest("m", ({"role": "user", "content": "x"},), 0.0, 1.0, 10, tools=(tool,))
    assert "tools" not in chat_body(plain, "m")
    assert chat_body(with_tools, "m")["tools"] == [tool]
    assert with_tools.key() != plain.key()
    assert set(plain.key_fields()) == set(with_tools.key_fields()) - {"tools"}
    data = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "function": {"name": "python", "arguments": '{"code":"1"}'}},
                        {"function": {"arguments": "{}"}},  # no name: skipped
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    answer = raw_answer(data)
    assert answer.text == "" and answer.tool_calls == (ToolCall("a", "python", '{"code":"1"}'),)


class ToolTransport:
    def __init__(self) -> None:
        self.requests: list[LMRequest] = []

    async def asend(self, request: LMRequest) -> RawAnswer:
        self.requests.append(request)
        return RawAnswer("", 5, 2, tool_calls=(ToolCall("z", "search", '{"query": "q"}'),))

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_the_client_returns_and_caches_tool_calls(tmp_path: Path) -> None:
    transport = ToolTransport()
    cache = ResponseCache(tmp_path / "cache")
    lm = LiteLLMClient("openai/m", transport=transport, cache=cache)  # type: ignore[arg-type]
    tools: list[Mapping[str, Any]] = [{"type": "function", "function": {"name": "search"}}]
    messages: list[Message] = [{"role": "user", "content": "hi"}]
    first = asyncio.run(lm.acomplete(messages, tools=tools))
    again = asyncio.run(lm.acomplete(messages, tools=tools))
    assert first.tool_calls == again.tool_calls == (ToolCall("z", "search", '{"query": "q"}'),)
    assert again.cache_hit and len(transport.requests) == 1
    assert isinstance(transport.requests[0], ToolRequest)
    asyncio.run(lm.acomplete(messages))  # without tools: another request
    assert len(transport.requests) == 2 and not isinstance(transport.requests[1], ToolRequest)
    lm.close()


def test_the_embedded_model_never_gets_native_tools() -> None:
    lm = LiteLLMClient("local/smollm2", transport=ToolTransport())  # type: ignore[arg-type]
    assert asyncio.run(lm.supports_tools()) is False
    lm.close()
