"""Fake worlds: `FakeServer` responders whose agent succeeds at random, reproducibly.

`RuleWorld` answers a benchmark task correctly with probability `p_with` when `rule` appears
in the system prompt (the agent's skills) and `p_without` otherwise. The draw is a hash of the
task, the sample index (the request's `seed` minus `base_seed`: moscopt sends seed + sample)
and whether the rule is present, so a run is reproducible; with `noise="prompt"` (the default)
the hash also covers the whole system prompt, as sampling at temperature > 0 does: any change
of wording redraws every answer, while the same prompt at the same sample index always gets
the same answer. With `noise="rule"` only the presence of the rule counts, and a reworded
prompt gets exactly the answers of the original. With `noise="seed"` the draw is common to every
prompt (a hash of the task and the sample index only, as a server that honours the seed and
samples the same tokens would): a task is solved with the rule whenever it is solved without it
(when p_with >= p_without), so paired differences are nonzero only where the rule matters.

A correct answer is `FINAL ANSWER: <gold>`, a wrong one `FINAL ANSWER: unknown`; the
benchmark's own grader scores them.

Two knobs make the world more like a real model and benchmark (scripts/bench_acceptance.py):
- `consistency`: the share of samples on which a prompt gives a task its usual answer (one draw
  per task and prompt, whatever the sample index) rather than a fresh one, as a model at a low
  temperature does; a second sample of the same task then says little that the first did not.
- `parts` > 1: graded answers (partial credit, like a fraction of test cases passed). Each of
  the `parts` parts is right with the same probability, as one draw with the whole answer with
  probability `agreement` (parts of one answer tend to stand or fall together: two parts agree
  beyond chance with correlation `agreement` squared), else on its own; the answer ends with a
  `PARTS: k/m` line that `grade_parts` (a custom grader) scores k/m.
  The mean reward is still p.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from moscopt.benchmarks.tasks import Grade, Task

WRONG = "unknown"
_PARTS = re.compile(r"^PARTS: (\d+)/(\d+)$", re.MULTILINE)


@dataclass
class RuleWorld:
    tasks: Iterable[Task]
    rule: str
    p_without: float
    p_with: float
    base_seed: int = 0
    noise: Literal["prompt", "rule", "seed"] = "prompt"
    consistency: float = 0.0
    parts: int = 1
    agreement: float = 0.5  # the chance that a part shares the whole answer's draw
    _gold: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gold = {t.prompt: str(t.gold) for t in self.tasks}
        for p in (self.p_without, self.p_with, self.consistency, self.agreement):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"probabilities must be within [0, 1], got {p}")
        if self.parts < 1:
            raise ValueError(f"parts must be at least 1, got {self.parts}")

    def score(self, task_prompt: str, sample: int, system: str) -> int:
        """How many parts (of `parts`) the agent gets right on this task at this sample index
        with this prompt."""
        has_rule = self.rule in system
        prompt = hashlib.sha256(system.encode()).hexdigest() if self.noise == "prompt" else ""
        # "seed": common random numbers, the same draw for every prompt
        rest: list[object] = [] if self.noise == "seed" else [has_rule, prompt]
        key = [task_prompt, sample, *rest]  # a fresh answer
        if self.consistency and _uniform(task_prompt, *rest, "usual", sample) < self.consistency:
            key = [task_prompt, *rest]  # the task's usual answer with this prompt
        p = self.p_with if has_rule else self.p_without
        whole = _uniform(*key)
        if self.parts == 1:
            return int(whole < p)
        draws = (
            whole if _uniform(*key, "agree", j) < self.agreement else _uniform(*key, "part", j)
            for j in range(self.parts)
        )
        return sum(u < p for u in draws)

    def succeeds(self, task_prompt: str, sample: int, system: str) -> bool:
        """Whether the agent answers this task wholly right at this sample index."""
        return self.score(task_prompt, sample, system) == self.parts

    def __call__(self, body: dict[str, Any]) -> str:
        """The responder: the last user message is the task, the system messages the skills."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        task = users[-1] if users else ""
        gold = self._gold.get(task)
        sample = int(body.get("seed") or 0) - self.base_seed
        right = 0 if gold is None else self.score(task, sample, system)
        graded = f"PARTS: {right}/{self.parts}\n" if self.parts > 1 else ""
        if right < self.parts:
            return f"I am not sure.\n{graded}FINAL ANSWER: {WRONG}"
        return f"Worked it out.\n{graded}FINAL ANSWER: {gold}"


def grade_parts(task: Task, response: str) -> Grade:
    """The graded world's grader (a `custom` grader_entry): the share of parts right."""
    found = _PARTS.findall(response)
    if not found:
        return Grade(0.0, None, "no PARTS line")
    right, parts = (int(x) for x in found[-1])
    return Grade(right / max(1, parts), f"{right}/{parts}", "partial credit")


def _uniform(*key: object) -> float:
    """A uniform draw in [0, 1) from a hash of `key`."""
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()
    return int(digest[:15], 16) / 16**15
