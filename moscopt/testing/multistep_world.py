"""A multi-step world for execution memory, step-level routing and halting.

Each task hides a chain of `k` milestones (k varies per task, 1..`max_chain`), each needing
one skill of the pool. At a step, the agent reaches milestone j + 1 exactly when its context
shows milestone j's token (its progress) and the skill of milestone j + 1 is active; the last
milestone's reply carries the right answer with a high stated confidence. Earlier replies may
propose a tentative, wrong answer with a low confidence (on `decoy_rate` of the tasks the same
wrong answer at every early step, so "two answers agree" is not proof). Once the answer is
known, a check step replies VERIFIED half of the time (deterministically per task and step)
and restates its solution otherwise, so steps after the answer cost calls and add nothing.
Every reply opens with `filler_words` words of reasoning, so a full transcript is long.

The gate reads progress the same way: it activates the skill of the next milestone visible in
its input (the first milestone when it sees no progress, i.e. when it routes on the query).

Use `routes()` with `FakeLM(routes=...)`, or `responder` with `FakeServer(responder=...)`:
the loopback server sees only the HTTP body, so there the call's kind is recognised from the
gate prompt's heading (as `moscopt.testing.scripted.respond` does).
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

SKILLS = ("decompose", "compute", "cross-check", "summarize")
_TASK_ID = re.compile(r"Task (ms-\d+)")
_SKILL = re.compile(r"^## Skill: (\S+)", re.MULTILINE)
FILLER = (
    "first consider the structure of the problem then weigh each quantity against the "
    "constraints before moving on to the next part of the reasoning so that nothing is lost"
)
WORDS = tuple(FILLER.split(" "))


def _h(*parts: object) -> int:
    return int(hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12], 16)


@dataclass(frozen=True)
class Chain:
    task_id: str
    skills: tuple[str, ...]  # the skill each milestone needs
    tokens: tuple[str, ...]  # what each milestone reveals
    answer: str
    decoy: str | None  # the same wrong answer at every early step, or None


@dataclass
class MultiStepWorld:
    n_tasks: int = 40
    max_chain: int = 3
    seed: int = 0
    decoy_rate: float = 0.3
    filler_words: int = 120
    chains: dict[str, Chain] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i in range(self.n_tasks):
            tid = f"ms-{i}"
            k = 1 + _h(self.seed, tid, "k") % self.max_chain
            skills = tuple(SKILLS[_h(self.seed, tid, j) % len(SKILLS)] for j in range(k))
            tokens = tuple(f"Z{_h(self.seed, tid, 'tok', j) % 10**6:06d}" for j in range(k))
            answer = str(100 + _h(self.seed, tid, "answer") % 900)
            decoy = None
            if _h(self.seed, tid, "decoy") % 1000 < self.decoy_rate * 1000:
                decoy = str(int(answer) + 1 + _h(self.seed, tid, "d") % 50)
            self.chains[tid] = Chain(tid, skills, tokens, answer, decoy)

    # -- tasks and skills ------------------------------------------------------------------------

    def tasks(self) -> list[Task]:
        return [
            Task(
                tid,
                "multistep",
                f"Task {tid}: find the code number hidden behind a chain of clues. Work one "
                "clue at a time.\n\nEnd with FINAL ANSWER: <number>",
                c.answer,
            )
            for tid, c in self.chains.items()
        ]

    def pool(self) -> Pool:
        skills = tuple(
            Skill(name=name, description=f"Use to {name} the current clue.", body=f"{name} it.")
            for name in SKILLS
        )
        gate = Skill(name="gate", description="Routes tasks.", body="Pick the right skill.")
        return Pool(skills=skills, gate=gate)

    def skill_agent(
        self, lm: Any, bench: Any, memory: Any, *, max_steps: int = 4, **options: Any
    ) -> Any:
        """A `SkillAgent` over `pool()` with step-level gating by its LLM gate (K = 1), up to
        `max_steps` steps, and the execution memory `memory` (`MemorySettings` or None)."""
        from moscopt.agent.skill_agent import SkillAgent
        from moscopt.routing.gate import LLMGate

        pool = self.pool()
        return SkillAgent(
            lm, bench, pool, LLMGate(lm, pool, 1), max_steps=max_steps, granularity="step",
            memory=memory, **options,
        )  # fmt: skip

    # -- the model -------------------------------------------------------------------------------

    def _chain(self, text: str) -> Chain | None:
        m = _TASK_ID.search(text)
        return self.chains.get(m.group(1)) if m else None

    @staticmethod
    def progress(chain: Chain, text: str) -> int:
        """Milestones visible in `text` (the highest whose token appears)."""
        return max((j + 1 for j, tok in enumerate(chain.tokens) if tok in text), default=0)

    def _filler(self, chain: Chain, step: int) -> str:
        start = _h(chain.task_id, step) % len(WORDS)
        words = [WORDS[(start + i) % len(WORDS)] for i in range(self.filler_words)]
        return "Reasoning: " + " ".join(words) + "."

    def agent(self, messages: Sequence[dict[str, str]]) -> str:
        text = "\n".join(m["content"] for m in messages)
        chain = self._chain(text)
        if chain is None:
            return "FINAL ANSWER: 0"
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        active = set(_SKILL.findall(system))
        j = self.progress(chain, text)
        # the step: replies in a transcript, or records in a memory context (no transcript)
        step = sum(m["role"] == "assistant" for m in messages) + text.count("[step ")
        k = len(chain.tokens)
        filler = self._filler(chain, step)
        if j == k:
            if _h(chain.task_id, step, "verify") % 2 == 0:
                return "VERIFIED"
            done = f"Rechecked clue {k} of {k}: {chain.tokens[-1]}."
            return f"{filler}\n\n{done}\nFINAL ANSWER: {chain.answer}\nCONFIDENCE: 0.9"
        if chain.skills[j] in active:
            line = f"Clue {j + 1} of {k} solved: {chain.tokens[j]}."
            if j + 1 == k:
                return f"{filler}\n\n{line}\nFINAL ANSWER: {chain.answer}\nCONFIDENCE: 0.9"
            guess = chain.decoy or str(int(chain.answer) + 7 * (j + 1) + step)
            return f"{filler}\n\n{line} Tentatively:\nFINAL ANSWER: {guess}\nCONFIDENCE: 0.3"
        return f"{filler}\n\nThis approach made no progress on clue {j + 1}."

    def gate(self, messages: Sequence[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        chain = self._chain(text)
        if chain is None:
            return f"ACTIVATE: {SKILLS[0]}"
        j = self.progress(chain, text)
        return f"ACTIVATE: {chain.skills[min(j, len(chain.skills) - 1)]}"

    def aggregate(self, messages: Sequence[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        chain = self._chain(text)
        if chain is None or self.progress(chain, text) < len(chain.tokens):
            return "FINAL ANSWER: 0"
        return f"FINAL ANSWER: {chain.answer}"

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
