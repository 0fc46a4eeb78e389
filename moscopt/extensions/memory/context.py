"""What a step after the first reads with `memory.enabled`: the system prompt, the task, the
retrieved records and what to do next, instead of the transcript, but only when that is no
longer than the transcript (in characters and in words): on a short run the records plus their
instructions would cost more than the few messages they replace, and the transcript is read.
"""

from __future__ import annotations

from collections.abc import Sequence

from moscopt.lm.base import Message

MEMORY_REFINE_INSTRUCTIONS = """\
Above is what earlier steps established. If the latest answer there is correct and complete,
reply with the single word VERIFIED and nothing else. Otherwise, continue: reply with a
corrected, complete solution that ends with the final answer in the format the task asks for."""

MEMORY_TOOL_INSTRUCTIONS = """\
Above is what earlier steps established (their tool calls and results). Continue: call a tool
if you need more, or reply with your final answer in the format the task asks for."""


def step_request(
    messages: list[Message], task_prompt: str, memory_text: str, refine: bool
) -> tuple[list[Message], bool]:
    """(the request of the next step, whether it reads the memory): the memory context built
    from `memory_text`, or `messages` (the transcript) when that context would be longer."""
    out: list[Message] = [m for m in messages[:1] if m["role"] == "system"]
    instruction = MEMORY_REFINE_INSTRUCTIONS if refine else MEMORY_TOOL_INSTRUCTIONS
    parts = [task_prompt, memory_text, instruction]
    out.append({"role": "user", "content": "\n\n".join(p for p in parts if p)})
    if no_longer(out, messages):
        return out, True
    return messages, False


def no_longer(request: Sequence[Message], than: Sequence[Message]) -> bool:
    """Whether `request` is no longer than `than` in characters and in words (what a
    tokenizer's count follows)."""
    return all(a <= b for a, b in zip(_size(request), _size(than), strict=True))


def _size(messages: Sequence[Message]) -> tuple[int, int]:
    texts = [m["content"] for m in messages]
    return sum(map(len, texts)), sum(len(t.split()) for t in texts)
