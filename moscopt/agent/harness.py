"""Run one task with a set of skills: the agent loop and the `Rollout` it produces.

Progressive disclosure (the default): only the bodies of the selected skills enter the agent's
system prompt; the rest of the pool stays out of context (the gate saw only descriptions). The
"no progressive disclosure" ablation (`pool_skills` given) puts every skill body of the pool in
the system prompt: the selected skills first, exactly as they are shown by default, then the
other skills under a heading that says the gate did not select them. Only the presence of the
unselected bodies changes; the gate still selects, its choice still reaches the agent, and
credit still goes to the selected skills.

What a step is. Single-turn by default (T = 1). With the `python` tool, a step is one turn: a
reply that contains a ```python block and no final answer is a tool call, its output comes back
as the next user message, up to `max_steps` turns; a reply without a tool call is the final
answer and ends the run. Without tools and with `max_steps` > 1 (step-level gating), a step is
one round of a draft/verify/refine loop: step 1 drafts a solution; each later step asks the
agent to check the latest solution against the task and either reply `VERIFIED` (the run ends
early and the latest solution is the final answer) or write a corrected complete solution, which
becomes the latest solution. The response graded is the latest solution.

With `reselect` (step-level gating), the skills are chosen again before every step after the
first, from the task and the progress so far (`progress_text`), and the system prompt changes to
the new selection.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from moscopt.agent.tools.toolbox import (
    TEXT_INSTRUCTIONS,
    Invocation,
    ToolBox,
    ToolOptions,
    make_toolbox,
)
from moscopt.core.prompting import render
from moscopt.core.skills import Skill
from moscopt.extensions.memory.context import step_request
from moscopt.extensions.memory.tracker import CONFIDENCE_INSTRUCTION
from moscopt.lm.base import LM, Message
from moscopt.lm.errors import LMFatalError, LMRequestError

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Task
    from moscopt.extensions.memory.tracker import StepMemory

TOOL_INSTRUCTIONS = TEXT_INSTRUCTIONS["python"]

AGGREGATE_INSTRUCTIONS = """\
Above are the answers and findings of several steps on this task. Decide which is right,
correcting any mistakes, and reply with the final answer in the format the task asks for."""

REFINE_INSTRUCTIONS = """\
Check the latest solution above against the task, step by step. If it is correct and complete,
reply with the single word VERIFIED and nothing else. Otherwise, reply with a corrected, complete
solution that ends with the final answer in the format the task asks for."""

OTHER_SKILLS_HEADING = (
    "# Other skills of the pool\n\n"
    "The gate did not select these skills for this task; they are shown for reference."
)

PROGRESS_CHARS = 1500  # the tail of the trajectory the gate sees when it reselects

_PY_BLOCK = re.compile(r"```(?:python|py)\s*\n(.*?)```", re.DOTALL)
_VERIFIED = re.compile(r"^\W*verified\W*$", re.IGNORECASE)

Reselect = Callable[[list[Message]], Awaitable[Sequence[Skill]]]


@dataclass
class Rollout:
    """One attempt at one task: what reflection and credit assignment read.

    `selections` holds every selection of skills made during the rollout, in step order (one
    with task-level gating, one per step with step-level gating); the first is `skills`.
    `sources` says how each was made (an `Activation.source`), the first being `activation`.
    Both default to the single selection (`skills`, `activation`).
    """

    task_id: str
    skills: tuple[str, ...]
    # how the skills were chosen: gate, partial, fallback, gate_error, random, all, single,
    # none, static (see `moscopt.routing.gate.Activation`)
    activation: str
    messages: list[Message]
    response: str
    answer: str | None
    reward: float
    detail: str = ""
    error: str | None = None  # an LM request failure or a grader error
    gate_error: str | None = None  # why the gate's answer was not used (first selection)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    sample: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    selections: tuple[tuple[str, ...], ...] = ()
    sources: tuple[str, ...] = ()
    offered: tuple[str, ...] = ()  # the first selection's `Activation.offered`

    def __post_init__(self) -> None:
        if not self.selections:
            self.selections = (tuple(self.skills),)
        if not self.sources:
            self.sources = (self.activation,) * len(self.selections)

    @property
    def success(self) -> bool:
        return self.reward >= 1.0

    def early_halt(self) -> dict[str, Any]:
        """The rollout record's halting fields (`RolloutEvent.halted_at`, `steps_left`): where
        halting stopped a run that would have gone on, and the steps the budget still allowed."""
        trace = self.extra.get("memory")
        if not isinstance(trace, dict) or not trace.get("halted_early"):
            return {}
        return {
            "halted_at": trace.get("halted_at"),
            "steps_left": int(trace.get("steps_left") or 0),
        }

    @property
    def soft(self) -> float:
        """The partial-credit score. The graders' reward already is partial credit where they
        give any (IFEval's `fraction` scoring, custom graders returning a float); the others
        are 0/1, so the soft score is the reward."""
        return self.reward

    @property
    def active(self) -> tuple[str, ...]:
        """Every skill selected at some step, in order of first selection."""
        return tuple(dict.fromkeys(name for sel in self.selections for name in sel))

    def to_json(self) -> dict[str, Any]:
        if self.extra:  # nested values (a memory trace): as `dataclasses.asdict` renders them
            data = asdict(self)
        else:  # the same dict without asdict's deep copy (a result row per task)
            data = {name: getattr(self, name) for name in _ROLLOUT_FIELDS}
            data["messages"] = [dict(m) for m in self.messages]
            data["extra"] = {}
        data["skills"] = list(self.skills)
        data["selections"] = [list(sel) for sel in self.selections]
        data["sources"] = list(self.sources)
        return data


_ROLLOUT_FIELDS = tuple(f.name for f in fields(Rollout))


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


def system_prompt(
    skills: Sequence[Skill],
    tools: Sequence[str],
    others: Sequence[Skill] = (),
    *,
    tool_text: str | None = None,
) -> str | None:
    """The agent's system prompt: the selected skills' bodies, then (no-progressive-disclosure
    ablation) the other skills' bodies, then the tool instructions (`tool_text`; default: the
    text protocol of `tools`)."""
    parts = []
    if skills or others:
        blocks = _blocks(skills)
        if others:
            blocks = "\n\n".join(b for b in (blocks, OTHER_SKILLS_HEADING, _blocks(others)) if b)
        parts.append(render("agent_system", skills=blocks).strip())
    if tool_text is None:
        tool_text = ToolBox(tuple(tools)).instructions() if tools else ""
    if tool_text:
        parts.append(tool_text)
    return "\n\n".join(parts) if parts else None


def _blocks(skills: Iterable[Skill]) -> str:
    return "\n\n".join(f"## Skill: {s.name}\n\n{s.body.strip()}" for s in skills)


def tool_call(response: str, benchmark: Benchmark) -> str | None:
    """The code of a tool call in `response`, or None when the response is a final answer."""
    from moscopt.benchmarks.extract import extract_answer

    blocks = _PY_BLOCK.findall(response)
    if not blocks or extract_answer(response) is not None:
        return None
    return str(blocks[-1]).strip() or None


def is_verified(response: str) -> bool:
    """Whether a verify/refine reply confirms the latest solution (its first line: VERIFIED)."""
    lines = [line for line in response.strip().splitlines() if line.strip()]
    return bool(lines) and _VERIFIED.match(lines[0].strip()) is not None


def progress_text(messages: Sequence[Message], limit: int = PROGRESS_CHARS) -> str:
    """What the agent has done so far, for the gate's reselection: the last reply and the tool
    output that answered it, if any (the tail of `limit` characters)."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    if last < 0:
        return ""
    parts = [m["content"] for m in messages[last:] if m["content"] != REFINE_INSTRUCTIONS]
    return "\n\n".join(parts)[-limit:]


def full_text(messages: Sequence[Message]) -> str:
    """The whole trajectory after the task (every reply and tool output), for the router's
    full-history reselection (`memory.route_on: full`)."""
    first = next((i for i, m in enumerate(messages) if m["role"] == "user"), len(messages))
    parts = [m["content"] for m in messages[first + 1 :] if m["content"] != REFINE_INSTRUCTIONS]
    return "\n\n".join(parts)


async def run_agent(
    lm: LM,
    task: Task,
    benchmark: Benchmark,
    skills: Sequence[Skill],
    *,
    tools: Sequence[str] = (),
    max_steps: int = 1,
    sample: int = 0,
    reselect: Reselect | None = None,
    pool_skills: Sequence[Skill] | None = None,
    memory: StepMemory | None = None,
    toolbox: ToolBox | None = None,
) -> tuple[list[Message], str, Usage, str | None]:
    """The agent loop (see the module docstring); returns (messages, final response, usage,
    error).

    `reselect`, for step-level gating, is awaited before each step after the first with the
    trajectory so far and returns the skills for the next step. `pool_skills`, for the
    no-progressive-disclosure ablation, are every skill of the pool (all shown to the agent).
    `memory` (`moscopt.extensions.memory`): every step becomes a record with the answer it proposes
    (`Benchmark.proposed_answer`, whether or not the reply also calls a tool); with
    `memory.settings.context` each later step reads the retrieved records instead of the
    transcript when they are no longer than it; with halting the run stops when the controller
    says the memory holds the answer, even while the model keeps asking for tools (the graded
    response is then that reply with its answer on a `FINAL ANSWER:` line). `toolbox` offers `tools`
    natively or by the text protocol (default: the text protocol).
    """
    usage = Usage()
    refine = not tools
    box = toolbox or make_toolbox(tools, None, ToolOptions())
    messages: list[Message] = []
    current: Sequence[Skill] = skills
    ask = memory is not None and memory.settings.ask_confidence
    _set_system(messages, _system(current, box, pool_skills, ask))
    messages.append({"role": "user", "content": task.prompt})
    response = ""
    for step in range(max_steps):
        retrieved = []
        if memory is not None and step > 0:  # never more than the transcript they replace
            retrieved = await memory.retrieve(len(full_text(messages)))
        if step > 0 and reselect is not None:
            current = await reselect(messages)
            _set_system(messages, _system(current, box, pool_skills, ask))
        request = messages
        if memory is not None and memory.settings.context and step > 0:
            request, reads = step_request(messages, task.prompt, memory.render(retrieved), refine)
            memory.use_context(reads)  # the memory, or (a short run) the transcript
        try:
            completion = await _complete(lm, request, sample, box)
        except LMFatalError:
            raise
        except LMRequestError as e:
            return messages, response, usage, f"LM request failed: {e}"
        usage.add(completion)
        text = completion.text
        invocation = None
        if not refine and step < max_steps - 1:
            invocation = box.parse(text, getattr(completion, "tool_calls", ()))
        messages.append({"role": "assistant", "content": _shown(text, invocation, box)})
        verified = refine and step > 0 and is_verified(text)
        if not verified:
            response = text
        observation, failed = "", False
        if invocation is not None:
            observation, failed = await asyncio.to_thread(box.run, invocation)
        halt = None
        if memory is not None:
            # the answer this step proposes, tool call or not; had the run stopped here with a
            # tool call pending, the graded response is the reply with that answer stated
            answer = benchmark.proposed_answer(response)
            candidate = response
            if invocation is not None and answer is not None:
                candidate = f"{text}\n\nFINAL ANSWER: {answer}"
            halt = await memory.observe(
                step=step,
                skills=[s.name for s in current],
                reply=text,
                candidate=candidate,
                answer=answer,
                calls=usage.calls,
                tool=invocation.tool if invocation is not None else None,
                tool_input=invocation.input if invocation is not None else "",
                observation=observation,
                tool_error=failed,
                pending=not verified and (refine or invocation is not None),
            )
        if verified or step == max_steps - 1 or (halt is not None and halt.halt):
            break
        if refine:
            messages.append({"role": "user", "content": REFINE_INSTRUCTIONS})
            continue
        if invocation is None:
            break
        heading = box.heading(invocation.tool)
        messages.append({"role": "user", "content": f"{heading}:\n{observation}"})
    if memory is not None and memory.settings.halting:
        response = await _aggregate(lm, task, memory, response, usage, sample)
    return messages, response, usage, None


async def _complete(lm: LM, messages: list[Message], sample: int, box: ToolBox) -> Any:
    if box.native and box.names:
        tool_lm: Any = lm  # a `ToolCallingLM` (the agent checked)
        return await tool_lm.acomplete(
            messages, sample=sample, purpose="agent", tools=box.definitions()
        )
    return await lm.acomplete(messages, sample=sample, purpose="agent")


def _shown(text: str, invocation: Invocation | None, box: ToolBox) -> str:
    """The assistant message kept in the transcript: a native call is written out in it."""
    if invocation is None or not box.native or invocation.call_id is None:
        return text
    return f"{text}\n[tool call {invocation.tool}]\n{invocation.input}".strip()


async def _aggregate(
    lm: LM, task: Task, memory: StepMemory, response: str, usage: Usage, sample: int
) -> str:
    """The final response of a run with halting: the aggregator's choice among the steps'
    candidates, or (aggregator `llm`, when the run halted) one call that reads the memory."""
    if memory.settings.aggregator == "llm" and memory.halted_at is not None:
        records = memory.render(memory.memory.records)
        prompt = f"{task.prompt}\n\n{records}\n\n{AGGREGATE_INSTRUCTIONS}"
        try:
            completion = await lm.acomplete(
                [{"role": "user", "content": prompt}], sample=sample, purpose="aggregate"
            )
        except LMFatalError:
            raise
        except LMRequestError:
            return response  # the latest candidate stands
        usage.add(completion)
        return str(completion.text)
    index = memory.final_index()
    return response if index is None else memory.candidates[index]


def _system(
    skills: Sequence[Skill], box: ToolBox, pool_skills: Sequence[Skill] | None, ask: bool
) -> str | None:
    chosen = {s.name for s in skills}
    others = [s for s in pool_skills or () if s.name not in chosen]
    system = system_prompt(skills, box.names, others, tool_text=box.instructions())
    if ask:
        system = f"{system}\n\n{CONFIDENCE_INSTRUCTION}" if system else CONFIDENCE_INSTRUCTION
    return system


def _set_system(messages: list[Message], system: str | None) -> None:
    """Make `system` the first message (insert, replace or remove it)."""
    has = bool(messages) and messages[0]["role"] == "system"
    if system is None:
        if has:
            del messages[0]
    elif has:
        messages[0] = {"role": "system", "content": system}
    else:
        messages.insert(0, {"role": "system", "content": system})
