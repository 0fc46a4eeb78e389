"""The static exports, routed with no gate call by a `ROUTING.md`:

- `static`: the gate's decisions on the training tasks, learned into IF/THEN rules;
- `topq`: the paper's static deployment (Table 3, "static top-Q routing"): every task activates
  the K skills of highest Q-score (ranked skills first, as the gate's own fallback ranks them),
  a table with no rule but its DEFAULT.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moscopt.errors import UserError
from moscopt.routing.gate import fallback_top_k
from moscopt.routing.table import RoutingTable
from moscopt.routing.table_derivation import Decision, Derivation, derive
from moscopt.run.ledger import RolloutEvent

if TYPE_CHECKING:
    from moscopt.benchmarks import Task
    from moscopt.core.skills import Pool
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

ROUTING_FILE = "ROUTING.md"


@dataclass
class Decisions:
    """The gate's latest usable decision per training task, and why other tasks have none."""

    decisions: list[Decision]
    training_tasks: int
    excluded: dict[str, int] = field(default_factory=dict)


def gate_decisions(
    run: RunDir, state: RunState, pool: Pool, tasks: Mapping[str, Task]
) -> Decisions:
    """Per training task: the last rollout the gate routed (not a fallback) to skills that are
    all still in `pool`. Later rollouts come from a later gate, so the last one wins."""
    train = list(state.splits.get("train", []))
    wanted = set(train)
    latest: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    skipped: dict[str, str] = {}
    for event in run.read_events(state, {"rollout"}):
        assert isinstance(event, RolloutEvent)
        task_id = event.task_id
        if task_id not in wanted:
            continue
        seen.add(task_id)
        skills = tuple(event.skills)
        if event.activation != "gate":
            skipped.setdefault(task_id, f"routed by {event.activation or '?'}")
        elif not all(s in pool for s in skills):
            skipped.setdefault(task_id, "its skills were removed by evolution")
        else:
            latest[task_id] = skills
    decisions = []
    for task_id in sorted(latest):
        task = tasks.get(task_id)
        if task is None:
            raise UserError(
                f"training task '{task_id}' is not in the benchmark data "
                "(use the same --data as when the run was trained)",
                path=run.state_path,
                field="splits",
            )
        decisions.append(Decision(task_id, task.prompt, latest[task_id]))
    excluded: Counter[str] = Counter()
    for task_id in train:
        if task_id not in latest:
            excluded[
                skipped.get(task_id, "never rolled out") if task_id in seen else "never rolled out"
            ] += 1
    return Decisions(decisions, len(train), dict(sorted(excluded.items())))


def default_skills(
    decisions: Sequence[Decision], pool: Pool, state: RunState, k: int, c_min: int
) -> tuple[str, ...]:
    """The most common decision (ties: higher total Q, then names); without decisions, the
    gate's own fallback: the top K by Q-score."""
    if not decisions:
        return fallback_top_k(pool.names, state.q, state.activations, k, c_min)
    counts = Counter(d.skills for d in decisions)
    return min(counts, key=lambda s: (-counts[s], -sum(state.q.get(n, 0.0) for n in s), s))


def default_only_note(summary: Mapping[str, Any], default: Sequence[str]) -> str | None:
    """What to tell the user when the table has no rule but DEFAULT (None: it has rules): every
    task gets the same skills, which is not routing."""
    if summary["word_rules"]:
        return None
    if summary["gate_decisions"]:
        why = (
            f"the gate's {summary['gate_decisions']} usable decisions on the training tasks "
            "all chose these skills or gave no rule to tell them apart"
        )
    else:
        excluded = ", ".join(f"{n} {w}" for w, n in summary["excluded"].items()) or "none"
        why = f"the gate made no usable decision on the training tasks ({excluded})"
    return (
        f"the routing table holds only a DEFAULT rule: every task gets {', '.join(default)}, "
        f"because {why}. Deploy the mixture (the gate) instead, or train again with a gate that "
        "follows its format (`gating.output: json`, a stronger --model)."
    )


def static_summary(found: Decisions, derivation: Derivation) -> dict[str, Any]:
    """How the table reproduces the gate, for the manifest and the report; `default_only`
    carries `default_only_note`'s text when the table has no rule but DEFAULT."""
    summary: dict[str, Any] = {
        "training_tasks": found.training_tasks,
        "gate_decisions": derivation.decisions,
        "agreeing": derivation.agreeing,
        "by_words": derivation.by_words,
        "by_default": derivation.by_default,
        "unmatched": derivation.unmatched,
        "excluded": found.excluded,
        "word_rules": len(derivation.table.rules),
    }
    summary["default_only"] = default_only_note(summary, derivation.table.default)
    return summary


def derive_table(
    run: RunDir, state: RunState, pool: Pool, tasks: Mapping[str, Task], k: int, c_min: int
) -> tuple[Derivation, dict[str, Any]]:
    found = gate_decisions(run, state, pool, tasks)
    default = default_skills(found.decisions, pool, state, k, c_min)
    derivation = derive(found.decisions, default)
    return derivation, static_summary(found, derivation)


def render_routing(
    derivation: Derivation,
    summary: Mapping[str, Any],
    pool: Pool,
    state: RunState,
    provenance: str,
) -> str:
    """`ROUTING.md`: how to read the rules, the rules, the evidence and the skills' scores."""
    table = derivation.table
    excluded = ", ".join(f"{n} {why}" for why, n in summary["excluded"].items()) or "none"
    lines = [
        "# Static routing table",
        "",
        f"K = {table.k}. No gate call at run time: the rules are tried in order and the first "
        "that matches the task activates its skills; when none matches, DEFAULT applies.",
        "",
        "- `IF WORDS w1, w2` matches a task whose text contains every listed word "
        "(case-insensitive whole words; a word is a run of letters and digits).",
        '- `IF TEXT "..."` (never derived: write it by hand) matches a task whose text, with '
        "whitespace runs collapsed to one space and trimmed, equals the quoted JSON string.",
        "- `# ...` after a rule is its evidence: the training tasks it routes as the gate did.",
        "",
        "moscopt reads only the Rules section; edit it by hand if you like (same line formats).",
        "",
        *([f"**Note:** {summary['default_only']}", ""] if summary.get("default_only") else []),
        table.rules_section().rstrip("\n"),
        "",
        "## Evidence",
        "",
        f"Derived from {provenance}.",
        f"Training tasks: {summary['training_tasks']}; with a gate decision: "
        f"{summary['gate_decisions']} (excluded: {excluded}).",
        f"Routed as the gate did: {summary['agreeing']} of {summary['gate_decisions']} "
        f"({summary['by_words']} by word rules, {summary['by_default']} by DEFAULT); "
        f"{summary['unmatched']} get DEFAULT though the gate chose otherwise: no rule of at "
        "most two words found in two or more of their tasks and in no other task picks them "
        "out, and a rule is never a copy of one training task.",
        "",
        "## Skills",
        "",
        "| skill | Q-score | activations |",
        "|---|---|---|",
    ]
    for name in pool.names:
        q = state.q.get(name)
        lines.append(
            f"| {name} | {'n/a' if q is None else f'{q:.3f}'} | {state.activations.get(name, 0)} |"
        )
    return "\n".join(lines) + "\n"


def topq_routing(pool: Pool, state: RunState, k: int, c_min: int) -> tuple[str, dict[str, Any]]:
    """`ROUTING.md` of the `topq` export and its manifest summary."""
    top = fallback_top_k(pool.names, state.q, state.activations, k, c_min)
    table = RoutingTable(rules=(), default=tuple(top))
    lines = [
        "# Static routing table: top-Q",
        "",
        f"K = {len(top)}. No gate call at run time: every task activates the {len(top)} skills "
        f"of highest Q-score (skills with at least {c_min} activations first), the paper's "
        "static deployment mode. Edit the DEFAULT line by hand if you like.",
        "",
        table.rules_section().rstrip("\n"),
        "",
        "## Skills",
        "",
        "| skill | Q-score | activations |",
        "|---|---|---|",
    ]
    for name in pool.names:
        q = state.q.get(name)
        lines.append(
            f"| {name} | {'n/a' if q is None else f'{q:.3f}'} | {state.activations.get(name, 0)} |"
        )
    summary = {"routing": "top-Q", "default": list(top), "c_min": c_min}
    return "\n".join(lines) + "\n", summary
