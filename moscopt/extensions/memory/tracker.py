"""`StepMemory`: the execution memory of one rollout, as the agent loop uses it.

After every step the loop calls `observe` (the step becomes a record with the answer it proposes,
kept as the grader compares answers, `moscopt.extensions.memory.answers`; the write gate decides
whether it is committed; the halting controller, when on, decides whether to stop, also on a step
that asks for another tool call). Before the next step, `retrieve` gives the retrieval gate's
records, within the size of the transcript they replace, which the router reads (with
`memory.route_on: memory`) and which replace the transcript in the agent's context (with
`memory.enabled`) unless they would be longer. `trace` is what `moscopt.extensions.memory.training`
learns from: kept on the rollout in `Rollout.extra["memory"]` (in memory only; of it the ledger's
rollout record carries where halting stopped a run early, `halted_at` and `steps_left`).

`MemorySettings.from_config` reads the `memory:` section and the learned parameters of the
run state; a switch off is the ablation (every record committed, every record retrieved,
untrained rules instead of the fitted models).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moscopt.extensions.memory.answers import AnswerKeeper, SameFn, tool_support
from moscopt.extensions.memory.gates import (
    RETRIEVAL_FEATURES,
    WRITE_FEATURES,
    RetrievalGate,
    WriteGate,
)
from moscopt.extensions.memory.halting import (
    HALTING_FEATURES,
    HaltDecision,
    HaltingController,
    vote_index,
)
from moscopt.extensions.memory.learned import Logistic
from moscopt.extensions.memory.params import MemoryState
from moscopt.extensions.memory.records import (
    ExecutionMemory,
    MemoryRecord,
    conclusion_of,
    confidence_of,
    words,
)

if TYPE_CHECKING:
    from moscopt.config import MemoryConfig
    from moscopt.embedding import Embedder

MEMORY_HEADING = "## Memory of earlier steps (selected)"
CONFIDENCE_INSTRUCTION = (
    "After your answer, add a line `CONFIDENCE: <a number from 0 to 1>` saying how sure you are."
)


@dataclass(frozen=True)
class MemorySettings:
    context: bool = False  # the agent reads the retrieved memory instead of the transcript
    route_on: str = "progress"  # what step-level gating reads: progress | full | query | memory
    write_gate: bool = True
    redundant_above: float = 0.92
    write_threshold: float = 0.5
    write_model: Logistic | None = None
    retrieval_gate: bool = True
    retrieve: int = 3
    context_chars: int = 2000
    conclusion_chars: int = 400
    retrieval_model: Logistic | None = None
    halting: bool = False
    agree: int = 2
    halt_threshold: float = 0.5
    halting_model: Logistic | None = None
    aggregator: str = "last"  # last | vote | llm
    ask_confidence: bool = False

    @property
    def tracking(self) -> bool:
        """Whether a rollout keeps a memory at all (today's agent, without it, does not)."""
        return self.context or self.halting or self.route_on == "memory"

    @classmethod
    def from_config(cls, config: MemoryConfig, state: MemoryState | None = None) -> MemorySettings:
        state = state or MemoryState()
        h = config.halting
        route = config.route_on
        if route == "auto":
            route = "memory" if config.enabled else "progress"

        def fitted(params: Any, names: tuple[str, ...], on: bool) -> Logistic | None:
            return params.model(names) if on and params is not None else None

        return cls(
            context=config.enabled,
            route_on=route,
            write_gate=config.write_gate,
            redundant_above=config.redundant_above,
            write_threshold=config.write_threshold,
            write_model=fitted(state.write, WRITE_FEATURES, config.learned_write),
            retrieval_gate=config.retrieval_gate,
            retrieve=config.retrieve,
            context_chars=config.context_chars,
            conclusion_chars=config.conclusion_chars,
            retrieval_model=fitted(state.retrieval, RETRIEVAL_FEATURES, config.learned_retrieval),
            halting=h.enabled,
            agree=h.agree,
            halt_threshold=h.threshold,
            halting_model=fitted(state.halting, HALTING_FEATURES, h.learned),
            aggregator=h.aggregator,
            ask_confidence=h.enabled and h.ask_confidence,
        )


class StepMemory:
    """The memory of one rollout (see the module docstring)."""

    def __init__(
        self,
        settings: MemorySettings,
        embedder: Embedder,
        *,
        task: str,
        max_steps: int,
        same: SameFn | None = None,
    ) -> None:
        """`same`: whether the benchmark's grader counts two answers the same
        (`Benchmark.same_answer`; None: normalized text)."""
        self.settings = settings
        self.embedder = embedder
        self.task = task
        self.max_steps = max(1, max_steps)
        self.memory = ExecutionMemory()
        self.memory.known = words(task)
        self.write = WriteGate(
            enabled=settings.write_gate,
            redundant_above=settings.redundant_above,
            model=settings.write_model,
            threshold=settings.write_threshold,
        )
        self.read = RetrievalGate(
            enabled=settings.retrieval_gate,
            k=settings.retrieve,
            max_chars=settings.context_chars,
            model=settings.retrieval_model,
        )
        self.halter = HaltingController(
            agree=settings.agree, threshold=settings.halt_threshold, model=settings.halting_model
        )
        self.keeper = AnswerKeeper(same)
        self.answers: list[str | None] = []
        self.observations: list[str] = []  # each step's tool result ("" without a tool)
        self.candidates: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.halted_at: int | None = None
        self.halted_early = False  # halted where the loop would have gone on (a tool call...)
        self._reading = "transcript"  # what the step about to run reads (`use_context`)
        self.retrieved: list[MemoryRecord] = []  # what the current step sees
        self._last: MemoryRecord | None = None

    async def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await asyncio.to_thread(self.embedder.encode_many, list(texts))
        return [v.tolist() for v in vectors]

    async def observe(
        self,
        *,
        step: int,
        skills: Sequence[str],
        reply: str,
        candidate: str,
        answer: str | None,
        calls: int,
        tool: str | None = None,
        tool_input: str = "",
        observation: str = "",
        tool_error: bool = False,
        pending: bool = False,
    ) -> HaltDecision | None:
        """Record one step; the halting decision when halting is on (else None).

        `candidate` is the response that would be graded if the run stopped now, `answer` the
        answer the step proposes (with or without a tool call), `calls` the LM calls made so
        far, `pending` whether the loop would go on without halting (a tool call to answer, a
        solution to verify).
        """
        keeper = self.keeper
        canonical, support = await asyncio.to_thread(
            lambda: (
                keeper.canonical(answer),
                tool_support(keeper, self.observations, answer),
            )
        )
        record = MemoryRecord(
            step=step,
            skills=tuple(skills),
            conclusion=conclusion_of(reply, self.settings.conclusion_chars),
            answer=canonical,
            tool=tool,
            tool_input=tool_input,
            observation=observation,
            tool_error=tool_error,
            confidence=confidence_of(reply),
        )
        [vector] = await self._embed([record.embed_text()])
        decision = self.write.decide(record, vector, self.memory, self.max_steps)
        if decision.commit:
            self.memory.add(record, vector, 1.0 if decision.score is None else decision.score)
        self._last = record
        self.answers.append(record.answer)
        self.observations.append(observation if tool is not None else "")
        self.candidates.append(candidate)
        # the features are kept even with halting off: such runs are the uncensored examples
        halt = self.halter.decide(
            self.answers,
            confidence=record.confidence,
            max_steps=self.max_steps,
            novelty=decision.novelty,
            support=support,
        )
        if self.settings.halting and halt.halt:
            self.halted_at = step
            self.halted_early = pending and step < self.max_steps - 1
        self.steps.append(
            {
                "step": step,
                "answer": record.answer,
                "confidence": record.confidence,
                "committed": decision.commit,
                "write": decision.reason,
                "write_features": list(decision.features),
                "halt_features": list(halt.features),
                "halt": halt.halt if self.settings.halting else None,
                "candidate": candidate,
                "calls": calls,
                "pending": pending,
                "context": self._reading,  # what this step read: memory or transcript
                "retrieval": [],
            }
        )
        return halt if self.settings.halting else None

    async def retrieve(self, budget: int | None = None) -> list[MemoryRecord]:
        """The records the next step (and its router) see, chosen by the retrieval gate within
        `budget` characters (the size of the transcript they replace) if given."""
        if not len(self.memory):
            self.retrieved = []
            return []
        query = self.task if self._last is None else f"{self.task}\n{self._last.embed_text()}"
        [vector] = await self._embed([query])
        chosen = self.read.select(self.memory, vector, budget)
        self.retrieved = chosen
        if self.steps:
            from moscopt.extensions.memory.gates import retrieval_features

            self.steps[-1]["retrieval"] = [
                [*retrieval_features(self.memory, i, vector), self.memory.records[i].step]
                for i in range(len(self.memory))
            ]
        return chosen

    def use_context(self, memory: bool) -> None:
        """Note what the step about to run reads: the memory, or the (shorter) transcript."""
        self._reading = "memory" if memory else "transcript"

    def render(self, records: Sequence[MemoryRecord]) -> str:
        if not records:
            return ""
        return MEMORY_HEADING + "\n" + "\n".join(r.text() for r in records)

    def final_index(self) -> int | None:
        """The step whose candidate is the final response (`last` or `vote`)."""
        if not self.candidates:
            return None
        if self.settings.aggregator == "vote":
            found = vote_index(self.answers)
            if found is not None:
                return found
        return len(self.candidates) - 1

    def steps_left(self) -> int:
        """The steps the budget still allowed when the run halted early (0 otherwise)."""
        if not self.halted_early or self.halted_at is None:
            return 0
        return self.max_steps - 1 - self.halted_at

    def trace(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "halted_at": self.halted_at,
            "halted_early": self.halted_early,
            # the steps the budget still allowed when the run halted early (each one LM call at
            # least): the calls halting saved, at most
            "steps_left": self.steps_left(),
            "max_steps": self.max_steps,
            "committed": len(self.memory),
        }
