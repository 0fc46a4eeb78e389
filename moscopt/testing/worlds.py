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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from moscopt.benchmarks.tasks import Task

WRONG = "unknown"


@dataclass
class RuleWorld:
    tasks: Iterable[Task]
    rule: str
    p_without: float
    p_with: float
    base_seed: int = 0
    noise: Literal["prompt", "rule", "seed"] = "prompt"
    _gold: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._gold = {t.prompt: str(t.gold) for t in self.tasks}
        for p in (self.p_without, self.p_with):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"success probabilities must be within [0, 1], got {p}")

    def succeeds(self, task_prompt: str, sample: int, system: str) -> bool:
        """Whether the agent answers this task right at this sample index with this prompt."""
        has_rule = self.rule in system
        prompt = hashlib.sha256(system.encode()).hexdigest() if self.noise == "prompt" else ""
        parts = [task_prompt, sample] + ([] if self.noise == "seed" else [has_rule, prompt])
        key = json.dumps(parts)  # "seed": common random numbers, the same draw for every prompt
        u = int(hashlib.sha256(key.encode()).hexdigest()[:15], 16) / 16**15
        return u < (self.p_with if has_rule else self.p_without)

    def __call__(self, body: dict[str, Any]) -> str:
        """The responder: the last user message is the task, the system messages the skills."""
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        task = users[-1] if users else ""
        gold = self._gold.get(task)
        sample = int(body.get("seed") or 0) - self.base_seed
        if gold is None or not self.succeeds(task, sample, system):
            return f"I am not sure.\nFINAL ANSWER: {WRONG}"
        return f"Worked it out.\nFINAL ANSWER: {gold}"
