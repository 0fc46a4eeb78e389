"""The configurations a study compares, as data: the paper's Table 2 and Table 3, and the others.

Each `Configuration` says what it changes (config keys, exactly the flags of `moscopt train`)
and how it is obtained:

- `train`: a training run of its own, at the study's call budget;
- `export`: a deployment mode of the `full` run of the same seed (`static`, `distilled`), no
  training of its own;
- `none`: no training at all (the no-skill baseline);
- `gepa`: GEPA's `optimize` on the pool's skills (`moscopt.study.gepa_side`).

`pool.k: N` is filled with the size of the pool a run loads (the K = N ablation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from moscopt.errors import UserError

Kind = Literal["train", "export", "none", "gepa"]
Table = Literal["ablation", "deployment", "comparison"]
POOL_SIZE = "N"  # placeholder for the size of the pool a run loads

FULL = "full"


@dataclass(frozen=True)
class Configuration:
    name: str
    what: str  # one line: what differs from the full method
    table: Table = "ablation"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    kind: Kind = "train"
    mode: str = "mixture"  # the deployment mode its test evaluation uses

    def resolved(self, pool_size: int) -> dict[str, Any]:
        """The overrides with `N` replaced by the pool size."""
        return {k: pool_size if v == POOL_SIZE else v for k, v in self.overrides.items()}

    @property
    def trains(self) -> bool:
        return self.kind == "train"


_ALL: tuple[Configuration, ...] = (
    Configuration(FULL, "MOSCOPT as configured", table="ablation"),
    # Table 2: each ablation changes exactly one thing
    Configuration(
        "single-skill", "N = K = 1 (one skill, no gate)", overrides={"pool.n": 1, "pool.k": 1}
    ),
    Configuration(
        "k-equals-1", "K = 1: one skill active per task (N unchanged)", overrides={"pool.k": 1}
    ),
    Configuration(
        "random-gate", "the gate picks K skills at random", overrides={"gating.policy": "random"}
    ),
    Configuration(
        "k-equals-n",
        "K = N: every skill active, no selection",
        overrides={"gating.policy": "all", "pool.k": POOL_SIZE},
    ),
    Configuration(
        "no-interleave",
        "skill and gate edits validated together",
        overrides={"training.interleave": False},
    ),
    Configuration(
        "no-gate-editing", "the gate is never edited", overrides={"gating.edit_steps": 0}
    ),
    Configuration(
        "step-gating",
        "step-level instead of task-level gating",
        overrides={"gating.granularity": "step"},
    ),
    Configuration(
        "no-progressive-disclosure",
        "every skill body in context",
        overrides={"agent.progressive_disclosure": False},
    ),
    Configuration(
        "no-cobreeding",
        "evolution reproduces by mutation only",
        overrides={"evolution.cobreed": False},
    ),
    Configuration(
        "reflect-edit",
        "EditAdam -> simple reflect-edit",
        overrides={"optimizer.method": "reflect_edit"},
    ),
    Configuration(
        "no-rejection-buffer",
        "proposals not shown rejected edits",
        overrides={"optimizer.rejection_buffer": False},
    ),
    Configuration(
        "no-evolution", "no collective evolution", overrides={"evolution.enabled": False}
    ),
    # Table 3: deployment modes of the full run, and the no-skill baseline
    Configuration(
        "static",
        "the full run's top-Q skills for every task (the paper's static mode, no gate call)",
        table="deployment",
        kind="export",
        mode="topq",
    ),
    Configuration(
        "static-table",
        "the full run's learned IF/THEN routing table (no gate call)",
        table="deployment",
        kind="export",
        mode="static",
    ),
    Configuration(
        "distilled",
        "the full run distilled into one skill",
        table="deployment",
        kind="export",
        mode="distilled",
    ),
    Configuration(
        "no-skill", "no skills at all (the baseline)", table="deployment", kind="none", mode="none"
    ),
    # other optimizers at the same budget
    Configuration(
        "gepa", "GEPA optimize() on the pool's skill texts", table="comparison", kind="gepa"
    ),
    Configuration(
        "skillopt-mode",
        "single-skill optimization (the SkillOpt stand-in)",
        table="comparison",
        overrides={"pool.n": 1, "pool.k": 1},
    ),
)

CATALOG: dict[str, Configuration] = {c.name: c for c in _ALL}
ABLATE = tuple(c.name for c in _ALL if c.table in ("ablation", "deployment"))
COMPARE_WITH = {"gepa": ("gepa",), "skillopt-mode": ("skillopt-mode",), "none": ()}


def ablate_names(only: Sequence[str] | None = None) -> list[str]:
    """The configurations of `moscopt ablate` (all of Tables 2 and 3, or `only` those), `full`
    first, then in catalog order; derived rows pull in nothing else (`full` is always run)."""
    if not only:
        return list(ABLATE)
    unknown = [n for n in only if n not in CATALOG or CATALOG[n].table == "comparison"]
    if unknown:
        raise UserError(
            f"unknown configuration(s) {', '.join(unknown)} (known: {', '.join(ABLATE)})",
            field="only",
        )
    wanted = {FULL, *only}
    return [n for n in ABLATE if n in wanted]


def compare_names(other: str) -> list[str]:
    """`moscopt compare --with OTHER`: the full method, the other one, and the no-skill row."""
    if other not in COMPARE_WITH:
        raise UserError(f"--with {other}: use one of {', '.join(COMPARE_WITH)}", field="with")
    return [FULL, *COMPARE_WITH[other], "no-skill"]


def get(name: str) -> Configuration:
    try:
        return CATALOG[name]
    except KeyError:
        raise UserError(f"unknown configuration '{name}'", field="configurations") from None
