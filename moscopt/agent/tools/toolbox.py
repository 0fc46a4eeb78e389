"""`ToolBox`: the tools one agent run may call, offered natively or through the text protocol.

Native (a model that supports function calling, see `moscopt.lm.base.ToolCallingLM`): every
tool is sent as an OpenAI function definition (`definitions`) and the model's calls come back
as `Completion.tool_calls`. Text protocol (every other model, the embedded one included): the
system prompt says how to call each tool with a fenced block (```python, ```shell, ```search)
and the reply's last such block is the call. Either way a reply with a final answer is not a
tool call, and a tool's result reaches the model bounded to `max_chars` characters.

Tools: `python` (the sandbox, `moscopt.agent.tools.python_tool`), `shell` (a POSIX-like shell in the
same sandbox, `moscopt.agent.tools.shell`; only when listed) and `search`
(`moscopt.agent.tools.search`).
`run` never raises for anything a model asks: failures are observations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from moscopt.core import jsonio

Runner = Callable[[str], str]

TEXT_INSTRUCTIONS = {
    "python": """\
## Tool: python
You can run Python code. To do so, reply with a single ```python code block and nothing after
it; the code runs in a fresh process (standard library only, no network, no files kept) and
its printed output comes back to you. Print what you need to see. When you have the result,
reply with your final answer in the format the task asks for.""",
    "shell": """\
## Tool: shell
You can run shell commands. Reply with a single ```shell block and nothing after it; the
commands run in a fresh sandboxed work directory (a POSIX-like shell with pipes, redirections,
&& and ||, and the usual text tools: echo, printf, cat, ls, grep, sort, uniq, wc, head, tail,
cut, tr, seq, python3 -c; no network, nothing kept between calls) and their output comes back
to you.""",
    "search": """\
## Tool: search
You can search documents. Reply with a single ```search block holding your query and nothing
after it; the most relevant passages come back to you. Search again with other words if they
do not answer the question.""",
}
NATIVE_INSTRUCTIONS = (
    "## Tools\nYou can call the tools {names} (function calls). When you have the result, reply "
    "with your final answer in the format the task asks for, without a tool call."
)
DEFINITIONS: dict[str, tuple[str, str, str]] = {  # name: (description, argument, its meaning)
    "python": (
        "Run a Python 3 program in a fresh sandbox (standard library, no network, nothing "
        "kept between calls) and return what it printed.",
        "code",
        "the complete program; print() what you need to see",
    ),
    "shell": (
        "Run shell commands in a fresh sandboxed work directory (a POSIX-like shell with the "
        "usual text tools, no network) and return their output.",
        "command",
        "the commands, one per line or joined with ; && || |",
    ),
    "search": (
        "Search the documents available for this task and return the most relevant passages.",
        "query",
        "what to search for, in a few keywords",
    ),
}
OUTPUT_HEADINGS = {"python": "Python output", "shell": "Shell output", "search": "Search results"}
_BLOCK = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_FENCES = {"python": "python", "py": "python", "shell": "shell", "bash": "shell", "sh": "shell"}
_FENCES["search"] = "search"


@dataclass(frozen=True)
class Invocation:
    """One tool call the model made; `error` when its arguments could not be read."""

    tool: str
    input: str
    call_id: str | None = None
    error: str | None = None


@dataclass
class ToolBox:
    names: tuple[str, ...]
    runners: Mapping[str, Runner] = field(default_factory=dict)
    max_chars: int = 4000
    native: bool = False

    def instructions(self) -> str:
        """What the system prompt says about the tools."""
        if self.native:
            return NATIVE_INSTRUCTIONS.format(names=", ".join(self.names))
        return "\n\n".join(TEXT_INSTRUCTIONS[n] for n in self.names if n in TEXT_INSTRUCTIONS)

    def definitions(self) -> list[dict[str, Any]]:
        """The OpenAI function definitions of the tools (native calls)."""
        out = []
        for name in self.names:
            description, arg, meaning = DEFINITIONS[name]
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": description,
                        "parameters": {
                            "type": "object",
                            "properties": {arg: {"type": "string", "description": meaning}},
                            "required": [arg],
                            "additionalProperties": False,
                        },
                    },
                }
            )
        return out

    def parse(self, text: str, tool_calls: Sequence[Any] = ()) -> Invocation | None:
        """The tool call of a reply (native calls first), or None when it is a final answer."""
        for call in tool_calls:
            name = getattr(call, "name", "")
            if name not in self.names:
                continue
            return _native_invocation(
                name, getattr(call, "arguments", ""), getattr(call, "id", None)
            )
        if tool_calls and self.native:
            unknown = str(getattr(tool_calls[0], "name", ""))
            return Invocation(unknown, "", None, f"unknown tool {unknown!r}")
        from moscopt.benchmarks.extract import extract_answer

        if extract_answer(text) is not None:
            return None
        found = None
        for fence, body in _BLOCK.findall(text):
            tool = _FENCES.get(fence.lower())
            if tool in self.names and body.strip():
                found = Invocation(tool, body.strip())
        return found

    def run(self, invocation: Invocation) -> tuple[str, bool]:
        """(the bounded observation, whether the call failed)."""
        if invocation.error is not None:
            return f"[error: {invocation.error}]", True
        runner = self.runners.get(invocation.tool)
        if runner is None:
            return f"[error: the tool {invocation.tool!r} is not available]", True
        try:
            text = runner(invocation.input)
        except Exception as e:  # a tool's own failure is the model's observation, not a crash
            return f"[error: {type(e).__name__}: {e}]"[: self.max_chars], True
        failed = "[error" in text[-300:] or "[exit code" in text[-300:]
        return bound(text, self.max_chars), failed

    def heading(self, tool: str) -> str:
        return OUTPUT_HEADINGS.get(tool, f"{tool} output")


def bound(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit} more characters cut]"
    return text[: max(0, limit - len(note))] + note


def _native_invocation(name: str, arguments: Any, call_id: Any) -> Invocation:
    arg = DEFINITIONS[name][1]
    cid = str(call_id) if call_id is not None else None
    if isinstance(arguments, Mapping):
        data: Any = arguments
    else:
        try:
            data = jsonio.loads(arguments or "{}")
        except ValueError:
            return Invocation(name, str(arguments), cid, "the call's arguments are not JSON")
    if not isinstance(data, Mapping) or not isinstance(data.get(arg), str):
        return Invocation(name, "", cid, f"the call needs a string argument {arg!r}")
    return Invocation(name, str(data[arg]), cid)


@dataclass(frozen=True)
class ToolOptions:
    """The `agent:` settings the tools read (see `moscopt.config.AgentConfig`)."""

    native: str = "auto"  # auto | text
    max_chars: int = 4000
    allow_unsandboxed: bool = False
    search_provider: str = "offline"
    search_corpus: str | None = None
    corpus_field: str = "search_corpus"
    top_k: int = 5
    snippet_chars: int = 400

    @classmethod
    def from_config(cls, agent: Any) -> ToolOptions:
        s = agent.search
        return cls(
            native=agent.native_tools,
            max_chars=agent.tool_output_chars,
            allow_unsandboxed=agent.allow_unsandboxed,
            search_provider=s.provider,
            search_corpus=s.corpus,
            corpus_field=s.corpus_field,
            top_k=s.top_k,
            snippet_chars=s.snippet_chars,
        )


def make_toolbox(
    names: Sequence[str], task: Any, options: ToolOptions, *, native: bool = False
) -> ToolBox:
    """The tools of one run on `task` (`search` reads the task's own documents when it has
    them, else the configured corpus or provider)."""
    runners: dict[str, Runner] = {}
    if "python" in names:
        from moscopt.agent.tools.python_tool import PythonTool

        runners["python"] = PythonTool(
            max_output=options.max_chars, allow_unsandboxed=options.allow_unsandboxed
        )
    if "shell" in names:
        from moscopt.agent.tools.shell import ShellTool

        runners["shell"] = ShellTool(
            max_output=options.max_chars, allow_unsandboxed=options.allow_unsandboxed
        )
    if "search" in names:
        from moscopt.agent.tools.search import search_runner

        runners["search"] = search_runner(options, getattr(task, "meta", {}) or {})
    return ToolBox(tuple(names), runners, max_chars=options.max_chars, native=native)
