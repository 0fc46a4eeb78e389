"""The run-state records of niches, competence, the experience archive and transfer.

`NicheState` is one optional field of `RunState` (`state.niches`, None when niches are off), so
it is saved with every `ctx.save()` and a resumed run continues from exactly what was learned.
Plain JSON: no embeddings are stored (they are recomputed, and cached in the process).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Competence(_Record):
    """A skill's reward on one niche: its EMA (the first rollout sets it) and a count."""

    ema: float = 0.0
    count: int = 0


class Shared(_Record):
    """Rollouts where a pair of skills was co-active on one niche: reward sum and count."""

    total: float = 0.0
    count: int = 0


class Insight(_Record):
    """One entry of the experience archive: a distilled lesson, of one niche or cross-niche."""

    id: str
    kind: Literal["niche", "meta"]
    niche: str  # where it was learned (a meta insight too)
    text: str
    givers: list[str] = Field(default_factory=list)  # the strong skills it was distilled from
    task_id: str = ""  # the failure it came from
    key: str = ""  # retrieval key: the text of that task (niche lessons are found by it)
    merged: int = 1  # how many near-duplicate distillations it stands for
    given: list[str] = Field(default_factory=list)  # recipients it is routed to, or was adopted by
    step: int = 0


class Routed(_Record):
    """An insight waiting to become evidence for a recipient's next EditAdam proposal."""

    insight: str  # Insight.id
    giver: str
    niche: str
    step: int = 0


class LastOutcome(_Record):
    """A task's latest sample: its reward and where its rollout event is in the log."""

    reward: float
    offset: int


class NicheState(_Record):
    source: str = ""  # how tasks get their niche: "field:<meta key>" or "kmeans:<k>"
    # clustering only: task id -> niche, and the centroids new tasks are assigned by
    assigned: dict[str, str] = Field(default_factory=dict)
    centroids: list[list[float]] = Field(default_factory=list)
    competence: dict[str, dict[str, Competence]] = Field(default_factory=dict)  # skill, niche
    shared: dict[str, dict[str, Shared]] = Field(default_factory=dict)  # "a|b", niche
    successes: dict[str, list[int]] = Field(default_factory=dict)  # niche -> rollout offsets
    last: dict[str, LastOutcome] = Field(default_factory=dict)  # task id -> latest sample
    archive: list[Insight] = Field(default_factory=list)
    pending: dict[str, list[Routed]] = Field(default_factory=dict)  # recipient -> insights
    # "giver>recipient" -> count, for routed and for adopted (accepted) insights
    routed: dict[str, int] = Field(default_factory=dict)
    adopted: dict[str, int] = Field(default_factory=dict)
    sessions: int = 0  # CODREAM sessions run
    # "recipient|niche" -> the recipient's rollout count there when it was last sent an insight:
    # it is not sent another until `min_count` more rollouts show what the last one did
    cooldown: dict[str, int] = Field(default_factory=dict)
    below: dict[str, int] = Field(default_factory=dict)  # lifecycle: consecutive weak evaluations
    evaluations: dict[str, int] = Field(default_factory=dict)  # lifecycle: evaluations per skill
