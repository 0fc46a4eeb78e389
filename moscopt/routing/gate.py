"""The gate's input (the skill summary table) and output (``ACTIVATE: id1, id2, ...``).

`parse_activation` is strict: the answer must name exactly K distinct skills of the pool. Anything
else is a `GateParseError` with the reason, which the caller handles by policy (`fallback_top_k`:
the top K by Q-score, preferring skills with at least c_min activations) and feeds back to the
gate's optimizer.

How a selection was made (`Activation.source`, copied to `Rollout.activation` / `sources`):

- `gate`: the LLM gate's answer named exactly K valid, distinct ids.
- `partial`: a schema-constrained answer repeated ids; completed in pool order (never by the
  moving Q-scores, so a pool's score does not drift). A parse failure.
- `fallback`: the answer could not be used (no `ACTIVATE:` line, unknown, duplicate or too
  few/many ids, or structured output that failed its schema: `LMOutputError`); top K by Q-score.
  A parse failure.
- `gate_error`: the gate call itself failed (`LMRequestError`: the provider refused or could not
  answer the request); top K by Q-score. Not a parse failure: the gate's text is not at fault.
  (Transient failures that outlast the retries are `LMUnavailableError`, fatal: the run stops.)
- `random`, `all`, `single`, `none`, `static`: no LLM gate (ablations and deployment modes).

`PARSE_FAILURES` is what gate restoration (`optimizer.policies.gate_restoration`) counts
against the gate, over `GATE_ANSWERS`.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from moscopt.core.credit import q_of
from moscopt.core.skills import Pool

if TYPE_CHECKING:
    from moscopt.lm.base import LM, Message

_ACTIVATE_RE = re.compile(r"^\W*activate\W*:\s*(.*)$", re.IGNORECASE)
_ID_STRIP = " \t`'\"*[](){}<>.;"
MAX_SCANNED_CHARS = 20_000  # a 100 KB answer is scanned from its end only


PARSE_FAILURES = frozenset({"partial", "fallback"})  # the gate answered, but not K valid ids
GATE_ANSWERS = frozenset({"gate", "partial", "fallback"})  # the gate answered (no LLM error)
GATE_ERROR = "gate_error"


class GateParseError(ValueError):
    """The gate's answer is not exactly K valid, distinct skill ids."""


@dataclass(frozen=True)
class Activation:
    skills: tuple[str, ...]
    source: str  # see the module docstring
    error: str | None = None  # why the gate's answer was not used (partial, fallback, gate_error)
    usage: Any = None  # the gate's `Completion`, if a call was made (for accounting)
    # the skills the gate chose from when not the whole pool (the hybrid router's shortlist)
    offered: tuple[str, ...] = ()


def parse_activation(text: str, valid: Sequence[str], k: int) -> tuple[str, ...]:
    """The K ids on the last ``ACTIVATE:`` line of `text`; raise `GateParseError` otherwise."""
    tail = text[-MAX_SCANNED_CHARS:]
    line = None
    for raw in reversed(tail.splitlines()):
        m = _ACTIVATE_RE.match(raw.strip())
        if m:
            line = m.group(1)
            break
    if line is None:
        raise GateParseError("no line of the form 'ACTIVATE: id1, id2, ...'")
    by_lower = {v.lower(): v for v in valid}
    ids = [p.strip(_ID_STRIP) for p in re.split(r"[,\s]+", line) if p.strip(_ID_STRIP)]
    unknown = [i for i in ids if i.lower() not in by_lower]
    if unknown:
        raise GateParseError(f"unknown skill id(s): {', '.join(unknown[:5])}")
    chosen = [by_lower[i.lower()] for i in ids]
    if len(set(chosen)) != len(chosen):
        raise GateParseError("duplicate skill ids")
    if len(chosen) != k:
        raise GateParseError(f"expected exactly {k} ids, got {len(chosen)}")
    return tuple(chosen)


def fallback_top_k(
    names: Sequence[str], q: Mapping[str, float], activations: Mapping[str, int], k: int, c_min: int
) -> tuple[str, ...]:
    """Top K by Q-score; ranked skills (≥ c_min activations) first, then by name for ties."""

    def key(name: str) -> tuple[int, float, str]:
        ranked = activations.get(name, 0) >= c_min
        return (0 if ranked else 1, -q_of(q, name), name)

    return tuple(sorted(names, key=key)[:k])


def random_k(names: Sequence[str], k: int, rng: random.Random) -> tuple[str, ...]:
    """The random-gate ablation."""
    return tuple(sorted(rng.sample(list(names), k)))


def summary_table(
    pool: Pool,
    *,
    q: Mapping[str, float] | None = None,
    activations: Mapping[str, int] | None = None,
) -> str:
    """The Markdown table the gate reads; with `q`, also the recent score and activation count."""
    if q is None:
        rows = ["| id | description |", "|---|---|"]
        rows += [f"| {s.name} | {_cell(s.description)} |" for s in pool]
    else:
        acts = activations or {}
        rows = ["| id | description | recent score | activations |", "|---|---|---|---|"]
        for s in pool:
            score = f"{q[s.name]:.2f}" if s.name in q else "n/a"
            rows.append(f"| {s.name} | {_cell(s.description)} | {score} | {acts.get(s.name, 0)} |")
    return "\n".join(rows)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "/")


def count_parse_failures(sources: Iterable[str]) -> tuple[int, int]:
    """(parse failures, gate answers) among activation sources. A `gate_error` (the LLM call
    failed) is in neither count; sources of other routers (random, all, ...) neither."""
    failures = answers = 0
    for source in sources:
        answers += source in GATE_ANSWERS
        failures += source in PARSE_FAILURES
    return failures, answers


# -- routers: the seam that chooses the skills for a task ------------------------------------


class Router(Protocol):
    """Chooses the skills for a task. `select` never raises for bad model output: it falls back
    (and says so in `Activation.error`); it may raise `LMFatalError` (the run must stop)."""

    async def select(self, task_text: str, *, sample: int = 0) -> Activation: ...


@dataclass
class GateStats:
    """What the gate may see besides descriptions (from `enrich_epoch` on) and uses to fall back."""

    q: Mapping[str, float] = field(default_factory=dict)
    activations: Mapping[str, int] = field(default_factory=dict)
    enriched: bool = False
    c_min: int = 5


MAX_COMBINATIONS = 256  # K-sets of the pool spelled out in the schema (10 choose 3 is 120)


def activation_schema(names: Sequence[str], k: int) -> dict[str, Any]:
    """JSON schema of a constrained gate answer: K distinct ids of the pool.

    When the pool has at most `MAX_COMBINATIONS` K-sets, the answer is one of them, spelled
    "a, b, c" in pool order: a grammar cannot forbid repeats in an array, and a small model
    repeats an id in most answers. Larger pools get an array of K ids (repeats completed in
    pool order, source `partial`).
    """
    if math.comb(len(names), k) <= MAX_COMBINATIONS:
        sets = [", ".join(c) for c in itertools.combinations(names, k)]
        activate: dict[str, Any] = {"type": "string", "enum": sets}
    else:
        items = {"type": "string", "enum": list(names)}
        activate = {"type": "array", "items": items, "minItems": k, "maxItems": k}
    return {
        "type": "object",
        "properties": {"activate": activate},
        "required": ["activate"],
        "additionalProperties": False,
    }


def schema_ids(schema: Mapping[str, Any]) -> tuple[list[str], int]:
    """(the pool's ids in pool order, K) of an `activation_schema`, in either form."""
    spec = schema["properties"]["activate"]
    if spec.get("type") == "array":
        return list(spec["items"]["enum"]), int(spec["minItems"])
    sets = [str(s).split(", ") for s in spec["enum"]]
    return list(dict.fromkeys(i for ids in sets for i in ids)), len(sets[0])


def schema_answer(schema: Mapping[str, Any], chosen: Sequence[str]) -> dict[str, Any]:
    """The answer naming `chosen` (K distinct ids) in the form `schema` asks for."""
    if schema["properties"]["activate"].get("type") == "array":
        return {"activate": list(chosen)}
    order = schema_ids(schema)[0]
    return {"activate": ", ".join(sorted(chosen, key=order.index))}


def _chosen_ids(answer: Any) -> list[str]:
    """The ids of a constrained answer (a K-set string or an array), first occurrences only."""
    ids = answer.split(", ") if isinstance(answer, str) else list(map(str, answer or []))
    return list(dict.fromkeys(ids))


def constrained_gate(model: str, setting: str) -> bool:
    """Whether the gate answers through a JSON schema (`auto`: for embedded `local/` models,
    which rarely follow the `ACTIVATE:` format unaided)."""
    return setting == "json" or (setting == "auto" and model.startswith("local/"))


HIGH_FALLBACK = 0.3  # above this share of gate answers falling back, moscopt says what to do


def fallback_hint(rate: float, constrained: bool) -> str:
    """What to do when the gate's answers fall back `rate` of the time; `constrained`: the gate
    already answers under a JSON schema (`constrained_gate`)."""
    if constrained:
        return (
            f"the gate's answers fall back {rate:.0%} of the time although it answers under a "
            "JSON schema: check that the server honours `response_format` JSON schemas (else "
            "set `gating.output: text`)"
        )
    return (
        f"the gate's answers fall back {rate:.0%} of the time (the model is not following the "
        "gate's `ACTIVATE:` format): consider `gating.output: json` (schema-constrained ids; "
        "`--set gating.output=json`) if the server accepts JSON schemas"
    )


class LLMGate:
    """MOSCOPT's textual gate: the gating skill reads the task and the summary table.

    With `constrained`, the answer is generated under `activation_schema` and read as the
    equivalent `ACTIVATE:` line, so the same strict parser and fallback apply.
    """

    def __init__(
        self,
        lm: LM,
        pool: Pool,
        k: int,
        stats: GateStats | None = None,
        *,
        constrained: bool = False,
    ) -> None:
        if pool.gate is None:
            raise ValueError("the pool has no gating skill")
        self.lm, self.pool, self.k = lm, pool, k
        self.stats = stats or GateStats()
        self.constrained = constrained

    def messages(self, task_text: str) -> list[Message]:
        from moscopt.core.prompting import render

        s = self.stats
        table = summary_table(
            self.pool, q=dict(s.q) if s.enriched else None, activations=s.activations
        )
        assert self.pool.gate is not None
        return [
            {"role": "system", "content": self.pool.gate.body},
            {"role": "user", "content": render("gate_user", task=task_text, k=self.k, table=table)},
        ]

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        from moscopt.lm.errors import LMError, LMFatalError, LMRequestError

        completion = None
        schema = activation_schema(self.pool.names, self.k) if self.constrained else None
        try:
            completion = await self.lm.acomplete(
                self.messages(task_text),
                sample=sample,
                purpose="gate",
                max_tokens=64 + 24 * self.k,
                schema=schema,
            )
            text = completion.text
            if schema is not None and isinstance(completion.data, dict):
                chosen = _chosen_ids(completion.data.get("activate"))
                if 0 < len(chosen) < self.k:  # a schema cannot forbid repeats: complete them
                    # in pool order, not by Q-score: the same answer for the same pool must give
                    # the same skills whatever the statistics are when it is measured
                    rest = [n for n in self.pool.names if n not in chosen]
                    filled = chosen + rest[: self.k - len(chosen)]
                    return Activation(
                        tuple(filled),
                        "partial",
                        error=f"{self.k - len(chosen)} repeated id(s) completed in pool order",
                        usage=completion,
                    )
                text = "ACTIVATE: " + ", ".join(chosen)
            return Activation(
                parse_activation(text, self.pool.names, self.k), "gate", usage=completion
            )
        except LMFatalError:
            raise
        except LMRequestError as e:  # the call failed: not the gate's fault
            source, error = GATE_ERROR, f"LM request failed: {e}"[:300]
        except (GateParseError, LMError) as e:  # fall back by policy; the caller logs `error`
            source, error = "fallback", str(e)[:300]
            completion = getattr(e, "completion", completion)  # LMOutputError: a call was made
        s = self.stats
        fallback = fallback_top_k(self.pool.names, s.q, s.activations, self.k, s.c_min)
        return Activation(fallback, source, error=error, usage=completion)


class RandomGate:
    """The random-gate ablation; the choice depends only on (seed, task, sample)."""

    def __init__(self, pool: Pool, k: int, seed: int) -> None:
        self.pool, self.k, self.seed = pool, k, seed

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        import hashlib

        digest = hashlib.sha256(f"{self.seed}\0{sample}\0{task_text}".encode()).hexdigest()
        return Activation(random_k(self.pool.names, self.k, random.Random(digest)), "random")


class FixedSkills:
    """Always the same skills: K = N ("all"), single-skill mode ("single") or none ("none")."""

    def __init__(self, names: Sequence[str], source: str) -> None:
        self.names, self.source = tuple(names), source

    async def select(self, task_text: str, *, sample: int = 0) -> Activation:
        return Activation(self.names, self.source)
