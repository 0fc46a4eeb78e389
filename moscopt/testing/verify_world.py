"""A tool world where the agent states its answer and keeps verifying: the waste halting is for.

Each task asks for an exact arithmetic result. The model computes it with the python tool, then
states the answer in every later reply while asking for one more verifying tool call, until the
step budget runs out, as real models often do. On `guess_rate` of the tasks its first reply
states a wrong estimate ("My first estimate is that the answer is 392") before computing, so the
first stated answer is not always right; every answer after a tool output is right. Each task
has one way of stating the answer (`FORMS`: "The answer is 391.", "**Answer:** 391", a JSON
field, a bold last line), and its spelling varies by step ("391", "391.0", "$391"), as
a model's does: answers agree only as the grader compares them, not as text. It never writes
`FINAL ANSWER:`, so a reply with code is a tool call and the default harness runs to the budget.
Every reply opens with `filler_words` words of reasoning. The python calls are real (the
sandbox): `(a * b) - c` and, to verify, the same value computed another way.

Use `routes()` with `FakeLM(routes=...)`, or `responder` with `FakeServer(responder=...)` (there
the gate's call is recognised by its prompt's heading, as `moscopt.testing.scripted` does).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from moscopt.benchmarks import Task
from moscopt.core.skills import Pool, Skill
from moscopt.lm.base import LMRequest

FORMS = ("phrase", "bold", "json", "last-line")
SKILL = "verify-with-python"
_TASK_ID = re.compile(r"Task (tv-\d+)")
FILLER = (
    "the product comes first and the subtraction after it so I keep the intermediate value "
    "exact and check each digit before trusting it"
)
WORDS = tuple(FILLER.split(" "))


def _h(*parts: object) -> int:
    return int(hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12], 16)


@dataclass(frozen=True)
class Problem:
    task_id: str
    a: int
    b: int
    c: int
    form: str  # how the model states the answer (one of `FORMS`)
    guess: int | None  # the wrong estimate its first reply states, or None

    @property
    def answer(self) -> int:
        return self.a * self.b - self.c

    @property
    def expression(self) -> str:
        return f"({self.a} * {self.b}) - {self.c}"


@dataclass
class VerifyWorld:
    n_tasks: int = 40
    seed: int = 0
    guess_rate: float = 0.3
    filler_words: int = 40
    problems: dict[str, Problem] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i in range(self.n_tasks):
            tid = f"tv-{i}"
            a = 12 + _h(self.seed, tid, "a") % 88
            b = 12 + _h(self.seed, tid, "b") % 88
            c = 1 + _h(self.seed, tid, "c") % 99
            form = FORMS[_h(self.seed, tid, "form") % len(FORMS)]
            guess = None
            if _h(self.seed, tid, "guess") % 1000 < self.guess_rate * 1000:
                guess = a * b - c + 1 + _h(self.seed, tid, "g") % 9
            self.problems[tid] = Problem(tid, a, b, c, form, guess)

    # -- tasks and skills ------------------------------------------------------------------------

    def tasks(self) -> list[Task]:
        return [Task(t, "verify", self.prompt(p), str(p.answer)) for t, p in self.problems.items()]

    @staticmethod
    def prompt(problem: Problem) -> str:
        return (
            f"Task {problem.task_id}: compute {problem.expression} exactly. Use python to be sure."
        )

    def pool(self) -> Pool:
        skill = Skill(
            name=SKILL,
            description="Use for exact arithmetic: compute with python, then check.",
            body="Compute the value with python, then verify it another way before answering.",
        )
        gate = Skill(name="gate", description="Routes tasks.", body="Pick the right skill.")
        return Pool(skills=(skill,), gate=gate)

    def skill_agent(
        self, lm: Any, bench: Any, memory: Any, *, max_steps: int = 5, **options: Any
    ) -> Any:
        """A `SkillAgent` over `pool()` with the python tool and its LLM gate (K = 1, gated once
        per task unless `granularity="step"` is passed), up to `max_steps` steps, and the
        execution memory `memory` (`MemorySettings` or None)."""
        from moscopt.agent.skill_agent import SkillAgent
        from moscopt.routing.gate import LLMGate

        pool = self.pool()
        return SkillAgent(
            lm, bench, pool, LLMGate(lm, pool, 1), tools=["python"], max_steps=max_steps,
            memory=memory, **options,
        )  # fmt: skip

    @staticmethod
    def toolbox() -> Any:
        """A `ToolBox` whose python tool evaluates the world's `print(<arithmetic>)` calls in
        process (for fast tests; the benchmark script runs the real sandbox)."""
        from moscopt.agent.tools.toolbox import ToolBox

        return ToolBox(("python",), {"python": _calculator})

    # -- the model -------------------------------------------------------------------------------

    def _problem(self, text: str) -> Problem | None:
        m = _TASK_ID.search(text)
        return self.problems.get(m.group(1)) if m else None

    @staticmethod
    def computed(problem: Problem, seen: str) -> bool:
        """Whether `seen` (what follows the task) shows the computed value."""
        return re.search(rf"(?<![\d.,]){problem.answer}(?!\d)", seen) is not None

    def _filler(self, problem: Problem, step: int) -> str:
        start = _h(problem.task_id, step) % len(WORDS)
        words = [WORDS[(start + i) % len(WORDS)] for i in range(self.filler_words)]
        return "Reasoning: " + " ".join(words) + "."

    def statement(self, problem: Problem, step: int, value: int | None = None) -> str:
        """How the model states `value` (default: the answer) at `step`."""
        number = problem.answer if value is None else value
        spelled = (f"{number}", f"{number}.0", f"${number}")[step % 3]
        if problem.form == "bold":
            return f"**Answer:** {spelled}"
        if problem.form == "json":
            return f'{{"answer": "{spelled}"}}'
        if problem.form == "last-line":
            return f"So far everything checks out.\n\n**{spelled}**"
        return f"The answer is {spelled}."

    def agent(self, messages: Sequence[dict[str, str]]) -> str:
        problem = self._problem("\n".join(m["content"] for m in messages))
        if problem is None:
            return "The answer is 0."
        # what the model has seen besides the task: replies and tool outputs, or memory records
        seen = "\n".join(m["content"] for m in messages if m["role"] != "system")
        seen = seen.replace(self.prompt(problem), "")
        step = sum(m["role"] == "assistant" for m in messages) + seen.count("[step ")
        filler = self._filler(problem, step)
        if not self.computed(problem, seen):
            code = f"```python\nprint({problem.expression})\n```"
            if problem.guess is not None and step == 0:
                guess = f"My first estimate is that the answer is {problem.guess}."
                return f"{filler}\n\n{guess} Let me compute it exactly.\n\n{code}"
            return f"{filler}\n\nI will compute it with the python tool.\n\n{code}"
        k = step + 1
        other = f"({problem.a} - {k}) * {problem.b} + {k * problem.b} - {problem.c}"
        verify = f"Let me verify it once more another way.\n\n```python\nprint({other})\n```"
        return f"{filler}\n\n{verify}\n\n{self.statement(problem, step)}"

    def gate(self, messages: Sequence[dict[str, str]]) -> str:
        return f"ACTIVATE: {SKILL}"

    def aggregate(self, messages: Sequence[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        problem = self._problem(text)
        if problem is None or not self.computed(problem, text.replace(self.prompt(problem), "")):
            return "FINAL ANSWER: 0"
        return f"FINAL ANSWER: {problem.answer}"

    # -- adapters --------------------------------------------------------------------------------

    def routes(self) -> dict[str, Callable[[LMRequest], str]]:
        """For `FakeLM(routes=...)`: each call answered by its purpose."""
        return {
            "agent": lambda r: self.agent(r.messages),
            "gate": lambda r: self.gate(r.messages),
            "aggregate": lambda r: self.aggregate(r.messages),
        }

    def responder(self, body: dict[str, Any]) -> str:
        """For `FakeServer(responder=...)`."""
        messages = [
            {"role": str(m.get("role")), "content": str(m.get("content"))}
            for m in body.get("messages") or []
        ]
        last = messages[-1]["content"] if messages else ""
        if "## Available skills" in last:
            return self.gate(messages)
        return self.agent(messages)


def _calculator(code: str) -> str:
    """The output of `print(<integer arithmetic>)`, or an error line like the sandbox's."""
    import ast
    import operator

    ops: dict[type, Callable[[int, int], int]] = {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
    }

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError("not integer arithmetic")

    try:
        call = ast.parse(code.strip(), mode="eval").body
        if not (isinstance(call, ast.Call) and len(call.args) == 1):
            raise ValueError("not a print call")
        return f"{value(call.args[0])}\n"
    except (SyntaxError, ValueError) as e:
        return f"[error: {e}]"
