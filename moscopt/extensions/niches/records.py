"""The run-state records of niches, competence, the experience archive and transfer.

`NicheState` is the niches extension's part of the run state (`RunState.extensions["niches"]`,
absent when niches are off or nothing was learned yet): `HoldsNiches` keeps it in the process
(`live_niches`) and hands it to every `ctx.save()`, so a resumed run continues from exactly what
was learned; `stored_niches` reads it from a saved state. Plain JSON: no embeddings are stored
(they are recomputed, and cached in the process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from moscopt.optimizer.engine.extension import Extension

if TYPE_CHECKING:
    from moscopt.optimizer.engine.context import Context
    from moscopt.run.migrations import Migration
    from moscopt.run.state import RunState

NAME = "niches"  # its key in the run state's `extensions`
# MIGRATIONS[i] upgrades the part's version i + 1 to i + 2. Append only.
MIGRATIONS: list[Migration] = []


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


class HoldsNiches(Extension):
    """The niches extension's part of the run state (`NichesExtension` builds on it): the
    `NicheState` of this process, None until something is learned."""

    name = NAME
    migrations = MIGRATIONS
    niches: NicheState | None = None

    def attach(self, ctx: Context, saved: dict[str, Any] | None) -> None:
        self.niches = None if saved is None else NicheState.model_validate(saved)

    def saved_state(self) -> dict[str, Any] | None:
        return None if self.niches is None else self.niches.model_dump(mode="json")


def live_niches(ctx: Context) -> NicheState | None:
    """The niche state of the training process `ctx` (None: nothing learned, or niches off)."""
    holder = ctx.extension(NAME)
    return holder.niches if isinstance(holder, HoldsNiches) else None


def stored_niches(state: RunState) -> NicheState | None:
    """The niche state a saved run state keeps (None: niches off or nothing learned)."""
    data = state.part(NAME, MIGRATIONS)
    return None if data is None else NicheState.model_validate(data)
