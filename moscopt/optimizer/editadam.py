"""EditAdam: the text optimizer of one skill (or of the gate).

One step is reflect -> propose -> apply; validating and accepting is the trainer's job
(`step = update(propose())`). The optimizer's textual state lives in `OptimizerState`:

- the step buffer: this epoch's failure analyses (cleared at each epoch);
- the rejection buffer: this epoch's rejected edits with their scores (FIFO, capacity R);
- the long-term memory: lessons condensed from each epoch's accepted and rejected edits.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from moscopt.agent.harness import Rollout
from moscopt.config import OptimizerConfig
from moscopt.core.edits import (
    ApplyResult,
    Proposal,
    ProposalError,
    apply_edits,
    parse_proposal,
    unique_lines,
)
from moscopt.core.edits import proposal_schema as _schema
from moscopt.core.prompting import render
from moscopt.core.skills import Skill
from moscopt.lm.base import LM
from moscopt.lm.errors import LMOutputError, LMRequestError
from moscopt.optimizer.policies.edit_budget import clamp
from moscopt.run.state import OptimizerState, RejectionRecord

NONE = "(none)"
PROPOSAL_TOKENS = 2048  # a bounded JSON proposal must never be cut off by the answer budget
CONSTRAINED_TEXT_TOKENS = 160  # a small model's analysis: what it says after this is repetition
TASK_CHARS, RESPONSE_CHARS, GOLD_CHARS = 1200, 1500, 200


@dataclass(frozen=True)
class Candidate:
    """A proposed new version of a skill, with what happened to each edit."""

    skill: Skill
    proposal: Proposal
    applied: ApplyResult

    @property
    def changed(self) -> bool:
        return self.applied.changed and self.skill.body != ""


def skill_text(skill: Skill) -> str:
    return skill.dumps()


def format_trajectories(rollouts: Sequence[Rollout], expected: Mapping[str, str]) -> str:
    """The trajectories as reflection reads them; `expected` holds each task's line saying what
    a right reply is (`Expected answer: ...`, or a judge's unmet checks)."""
    parts = []
    for i, r in enumerate(rollouts, 1):
        task = next((m["content"] for m in r.messages if m["role"] == "user"), "")
        outcome = "CORRECT" if r.success else f"WRONG (reward {r.reward:.2f})"
        tools = [m["content"] for m in r.messages[2:] if m["role"] == "user"]
        parts.append(
            "\n".join(
                [
                    f"### Trajectory {i}: {outcome}",
                    f"Skills active: {', '.join(r.skills) or NONE}",
                    f"Task:\n{cut(task, TASK_CHARS)}",
                    *([f"Tool outputs: {len(tools)}"] if tools else []),
                    f"Agent's final reply:\n{cut(r.response, RESPONSE_CHARS)}",
                    f"Extracted answer: {r.answer if r.answer is not None else '(none found)'}",
                    expected.get(r.task_id, "Expected answer: ?"),
                    *([f"Error: {r.error}"] if r.error else []),
                ]
            )
        )
    return "\n\n".join(parts) or NONE


def format_rejections(records: Sequence[RejectionRecord]) -> str:
    lines = []
    for rec in records:
        scores = f"score {rec.score_before:.3f} -> {rec.score_after:.3f}"
        line = f"- step {rec.step}: {scores}: {rec.summary}"
        if rec.failure_patterns:
            line += f" (addressing: {'; '.join(rec.failure_patterns)})"
        lines.append(line)
    return "\n".join(lines) or NONE


def bullets(items: Sequence[str]) -> str:
    return "\n\n".join(items) or NONE


def failure_patterns(analysis: str, limit: int = 3) -> list[str]:
    """The first bullets of an analysis, shortened: what a rejected edit was trying to fix."""
    found = []
    for line in analysis.splitlines():
        text = line.strip().lstrip("-*•0123456789.) ").strip()
        if text:
            found.append(cut(text, 100))
        if len(found) == limit:
            break
    return found


class EditAdam:
    """Reflect, propose and apply for one target; stateless apart from the `OptimizerState`."""

    def __init__(
        self, lm: LM, config: OptimizerConfig, *, kind: str = "skill", constrained: bool = False
    ) -> None:
        self.lm = lm
        self.config = config
        self.kind = kind  # "skill" or "gate": selects the prompts
        self.constrained = constrained  # grammar-constrained decoding: anchors from an enum

    @property
    def buffered(self) -> bool:
        """EditAdam proper; False for the simple reflect-edit ablation (no step buffer, no
        rejection buffer, no long-term memory)."""
        return self.config.method == "editadam"

    @property
    def memory_on(self) -> bool:
        return self.buffered and self.config.long_term_memory

    async def reflect(
        self,
        target: Skill,
        evidence: Sequence[str],
        state: OptimizerState,
        *,
        k: int = 0,
        table: str = "",
    ) -> str | None:
        """Analyse each group of trajectories (concurrently) and merge the analyses `merge_batch`
        (M_g) at a time until one is left; None if the LM refused every request. Pure: the
        engine adds the analysis to the step buffer (`keep_analysis`) when it decides."""
        past = bullets(state.step_buffer) if self.buffered else NONE
        memory = "\n".join(state.long_term_memory) if self.memory_on else ""
        prompts = [
            self._reflect_prompt(target, e, past, memory or NONE, k, table) for e in evidence
        ]
        answers = await asyncio.gather(
            *(self._ask(p, f"reflect-{self.kind}", 400) for p in prompts)
        )
        analyses = [a.strip() for a in answers if a is not None and a.strip()]
        while len(analyses) > 1:
            groups = [
                analyses[i : i + self.config.merge_batch]
                for i in range(0, len(analyses), self.config.merge_batch)
            ]
            merged = await asyncio.gather(*(self._merge(target.name, g) for g in groups))
            analyses = [m for m in merged if m]
        if not analyses:
            return None
        return cut(analyses[0], 1500)

    def keep_analysis(self, state: OptimizerState, analysis: str | None) -> None:
        """Add this step's analysis to the step buffer (reflect-edit keeps only the latest)."""
        if analysis is None:
            return
        if self.buffered:
            state.step_buffer.append(analysis)
        else:
            state.step_buffer[:] = [analysis]

    def _reflect_prompt(
        self, target: Skill, evidence: str, past: str, memory: str, k: int, table: str
    ) -> str:
        if self.kind == "gate":
            return render(
                "reflect_gate",
                gate=skill_text(target),
                k=k,
                table=table,
                cases=evidence,
                step_buffer=past,
                memory=memory,
            )
        return render(
            "reflect",
            skill=skill_text(target),
            trajectories=evidence,
            step_buffer=past,
            memory=memory,
        )

    async def _merge(self, name: str, group: Sequence[str]) -> str | None:
        if len(group) == 1:
            return group[0]
        analyses = "\n\n".join(f"### Analysis {i}\n{a}" for i, a in enumerate(group, 1))
        text = await self._ask(
            render("merge", target=name, analyses=analyses), f"merge-{self.kind}", 500
        )
        return text.strip() if text and text.strip() else group[0]

    async def propose(
        self,
        target: Skill,
        state: OptimizerState,
        *,
        analysis: str | None,
        scores: str,
        max_edits: int,
    ) -> Proposal:
        """Ask for at most `max_edits` edits; raises `ProposalError` for unusable output."""
        shown = self.buffered and self.config.rejection_buffer
        rejections = format_rejections(state.rejection_buffer if shown else [])
        memory = "\n".join(state.long_term_memory) if self.memory_on else ""
        name = "propose_gate" if self.kind == "gate" else "propose"
        earlier = state.step_buffer if self.buffered else []
        current = [analysis] if analysis else []
        analyses = (earlier + current)[-self.config.merge_batch :]
        values = {
            ("gate" if self.kind == "gate" else "skill"): skill_text(target),
            "analyses": bullets(analyses),
            "rejections": rejections,
            "memory": memory or NONE,
            "max_edits": max_edits,
            "scores": scores,
        }
        try:
            completion = await self.lm.acomplete(
                [{"role": "user", "content": render(name, **values)}],
                schema=_schema(max_edits, unique_lines(target.body) if self.constrained else None),
                purpose=f"propose-{self.kind}",
                max_tokens=PROPOSAL_TOKENS,
            )
        except LMOutputError as e:
            return parse_proposal(e.text)  # the typed error carries the raw text: try it strictly
        except LMRequestError as e:
            raise ProposalError(f"the model refused the request: {e}") from None
        if isinstance(completion.data, dict):
            return parse_proposal(completion.data)
        return parse_proposal(completion.text)

    def apply(self, target: Skill, proposal: Proposal, max_edits: int) -> Candidate:
        result = apply_edits(target.body, proposal.edits, max_edits=max_edits)
        return Candidate(target.with_body(result.text), proposal, result)

    def reject(
        self,
        state: OptimizerState,
        *,
        step: int,
        before: float,
        after: float,
        summary: str,
        analysis: str | None = None,
    ) -> None:
        """Record a rejected edit in the FIFO rejection buffer (capacity R). The buffer is kept
        even when proposals are not shown it (`rejection_buffer: false`): long-term memory still
        learns from rejections, so that ablation changes one thing only."""
        state.rejected += 1
        if not self.buffered or self.config.rejection_capacity == 0:
            return
        basis = analysis or (state.step_buffer[-1] if state.step_buffer else "")
        patterns = failure_patterns(basis) if basis else []
        state.rejection_buffer.append(
            RejectionRecord(
                step=step,
                score_before=before,
                score_after=after,
                summary=cut(summary, self.config.summary_chars),
                failure_patterns=patterns,
            )
        )
        del state.rejection_buffer[: -self.config.rejection_capacity]

    async def condense_memory(
        self, target_name: str, state: OptimizerState, accepted: Sequence[str]
    ) -> None:
        """Fold this epoch's accepted and rejected edits into the long-term memory."""
        if not self.memory_on or not (accepted or state.rejection_buffer):
            return
        prompt = render(
            "memory",
            target=target_name,
            memory="\n".join(state.long_term_memory) or NONE,
            accepted="\n".join(f"- {a}" for a in accepted) or NONE,
            rejected=format_rejections(state.rejection_buffer),
        )
        text = await self._ask(prompt, "memory", 300)
        if text is None:
            return
        lessons = [ln.strip() for ln in text.splitlines() if is_lesson(ln)]
        if lessons:
            state.long_term_memory = [cut(ln, 300) for ln in lessons[:6]]

    async def _ask(self, prompt: str, purpose: str, max_tokens: int) -> str | None:
        """A plain-text answer; None if the provider refused this request (`LMRequestError`).
        Fatal LM errors propagate: the run must stop. Under constrained decoding (a small
        model) an analysis or lesson is cut at `CONSTRAINED_TEXT_TOKENS`."""
        if self.constrained:
            max_tokens = min(max_tokens, CONSTRAINED_TEXT_TOKENS)
        try:
            completion = await self.lm.acomplete(
                [{"role": "user", "content": prompt}], purpose=purpose, max_tokens=max_tokens
            )
        except LMRequestError:
            return None
        return completion.text

    async def choose_budget(self, hard: float, soft: float, history: str) -> int:
        """The autonomous schedule: the LLM picks L in [L_min, L_max]."""
        lo, hi = self.config.l_min, self.config.l_max
        prompt = render(
            "budget", hard=f"{hard:.3f}", soft=f"{soft:.3f}", l_min=lo, l_max=hi, history=history
        )
        text = await self._ask(prompt, "budget", 16)
        if text is None:
            return hi
        m = re.search(r"L\s*[:=]\s*(\d+)", text) or re.search(r"\d+", text)
        return clamp(int(m.group(1) if m.groups() else m.group(0)), hi, lo) if m else hi


def is_lesson(line: str) -> bool:
    """A bullet that states a rule in words, not an echo of scores (`- step 1: 0.167`)."""
    line = line.strip()
    if not line.startswith("-"):
        return False
    words = re.findall(r"[A-Za-z]{3,}", line)
    return len([w for w in words if w.lower() not in ("step", "score", "epoch")]) >= 3


def cut(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
