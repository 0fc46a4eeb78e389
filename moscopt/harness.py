"""Run one task with a set of skills: the agent loop and the `Rollout` it produces.

Progressive disclosure: only the bodies of the activated skills enter the agent's system
prompt. Single-turn by default; with the `python` tool enabled, the agent may run code for up to
`max_steps` turns: a reply that contains a ```python block and no final answer is a tool call,
its output comes back as the next user message.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from moscopt.lm.base import LM, Message
from moscopt.lm.errors import LMFatalError, LMRequestError
from moscopt.prompting import render
from moscopt.skills import Skill

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task

TOOL_INSTRUCTIONS = """\
## Tool: python
You can run Python code. To do so, reply with a single ```python code block and nothing after
it; the code runs in a fresh process (standard library only, no network, no files kept) and
its printed output comes back to you. Print what you need to see. When you have the result,
reply with your final answer in the format the task asks for."""

_PY_BLOCK = re.compile(r"```(?:python|py)\s*\n(.*?)```", re.DOTALL)


@dataclass
class Rollout:
    """One attempt at one task: what reflection and credit assignment read."""

    task_id: str
    skills: tuple[str, ...]
    activation: str  # how the skills were chosen: gate, fallback, random, all, single, none
    messages: list[Message]
    response: str
    answer: str | None
    reward: float
    detail: str = ""
    error: str | None = None  # an LM request failure or a grader error
    gate_error: str | None = None  # why the gate's answer was not used
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    sample: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.reward >= 1.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["skills"] = list(self.skills)
        return data


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0

    def add(self, completion: Any) -> None:
        self.prompt_tokens += completion.usage.prompt_tokens
        self.completion_tokens += completion.usage.completion_tokens
        self.cost += completion.cost
        self.calls += 0 if completion.cache_hit else 1


def system_prompt(skills: Sequence[Skill], tools: Sequence[str]) -> str | None:
    """The agent's system prompt: the activated skills' bodies (and tool instructions)."""
    parts = []
    if skills:
        blocks = "\n\n".join(f"## Skill: {s.name}\n\n{s.body.strip()}" for s in skills)
        parts.append(render("agent_system", skills=blocks).strip())
    if "python" in tools:
        parts.append(TOOL_INSTRUCTIONS)
    return "\n\n".join(parts) if parts else None


def tool_call(response: str, benchmark: Benchmark) -> str | None:
    """The code of a tool call in `response`, or None when the response is a final answer."""
    from moscopt.benchmarks.extract import extract_answer

    blocks = _PY_BLOCK.findall(response)
    if not blocks or extract_answer(response) is not None:
        return None
    return str(blocks[-1]).strip() or None


async def run_agent(
    lm: LM,
    task: Task,
    benchmark: Benchmark,
    skills: Sequence[Skill],
    *,
    tools: Sequence[str] = (),
    max_steps: int = 1,
    sample: int = 0,
    reselect: Callable[[list[Message]], Any] | None = None,
) -> tuple[list[Message], str, Usage, str | None]:
    """The agent loop; returns (messages, final response, usage, error).

    `reselect`, for step-level gating, is awaited before each step after the first with the
    trajectory so far and returns the skills for the next step.
    """
    usage = Usage()
    messages: list[Message] = []
    system = system_prompt(skills, tools)
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": task.prompt})
    response = ""
    for step in range(max_steps):
        if step > 0 and reselect is not None:
            new_skills = await reselect(messages)
            system = system_prompt(new_skills, tools)
            if system and messages[0]["role"] == "system":
                messages[0] = {"role": "system", "content": system}
        try:
            completion = await lm.acomplete(messages, sample=sample, purpose="agent")
        except LMFatalError:
            raise
        except LMRequestError as e:
            return messages, response, usage, f"LM request failed: {e}"
        usage.add(completion)
        response = completion.text
        messages.append({"role": "assistant", "content": response})
        code = tool_call(response, benchmark) if "python" in tools else None
        if code is None or step == max_steps - 1:
            break
        observation = await asyncio.to_thread(_run_python_tool, code)
        messages.append({"role": "user", "content": f"Python output:\n{observation}"})
    return messages, response, usage, None


def _run_python_tool(code: str) -> str:
    from moscopt.tools import PythonTool

    return PythonTool()(code)
