"""The `agents` export: a skills folder that an Agent Skills agent (Claude Code, Codex CLI,
OpenCode, ...) routes by itself, with no moscopt at run time.

Those agents see every skill's `name` and `description` and open a skill's body when its
description fits the task. A mixture's gate would be one more skill to them and a static
export's ROUTING.md no skill at all, so the learned routing would be lost. This export carries
it where they look:

- every skill's `description` ends with when to use it: the words of the routing-table rules
  that activate it, the skills it is activated with, and whether it is a default;
- a small router skill, `skill-router`, whose description asks to be read first and whose body
  is the table as plain instructions (rules in order, the default, K);
- `ROUTING.md`, the same table for `moscopt eval` and `moscopt route` (not a skill).

The table is the static export's (`moscopt.exports.static`), derived from the gate's decisions
on the training tasks; nothing here calls a model, so the same run gives the same bytes. Every
front-matter string is cleaned (`clean_description`, `string_metadata`) so that loaders which
split front matter naively read what is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from moscopt.core.skill_format import DESCRIPTION_MAX, clean_description, string_metadata
from moscopt.core.skills import Skill

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool
    from moscopt.routing.table import RoutingTable
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

ROUTER_SKILL = "skill-router"
CLAUSES_SHOWN = 8  # routing clauses per description
ROUTER_DESCRIPTION = (
    "Read this skill first, for every task: it says which of the other skills in this folder "
    "to use together for the task at hand (routing learned by moscopt from training tasks)."
)


def agents_export(
    run: RunDir,
    config: Config,
    state: RunState,
    pool: Pool,
    k: int,
    resolved: tuple[Benchmark, Splits] | None = None,
) -> tuple[list[Skill], str, dict[str, Any]]:
    """(the skills to write, ROUTING.md, the manifest's summary) of a run."""
    from moscopt.app.benchmark import resolve_benchmark
    from moscopt.exports.static import derive_table, render_routing

    _, splits = resolved or resolve_benchmark(config, state.benchmark)
    tasks = {t.id: t for t in splits["all"]}
    derivation, summary = derive_table(run, state, pool, tasks, k, config.credit.c_min)
    digest = (state.pool_digest or "")[:12]
    provenance = f"run `{run.path.resolve().name}` (step {state.step}, pool {digest})"
    routing = render_routing(derivation, summary, pool, state, provenance)
    skills, agents = agent_skills(pool, derivation.table, summary, provenance)
    return skills, routing, {**agents, "static": summary}


def agent_skills(
    pool: Pool, table: RoutingTable, summary: Mapping[str, Any], provenance: str
) -> tuple[list[Skill], dict[str, Any]]:
    """The skills to write (each with its routing hint, and the router skill) and a summary
    for the manifest."""
    hints = routing_hints(table)
    skills = [with_hint(s, hints.get(s.name, "")) for s in pool.skills]
    if ROUTER_SKILL in pool:
        raise ValueError(f"the pool already has a skill named {ROUTER_SKILL!r}")
    skills.append(router_skill(table, pool, summary, provenance))
    words = sum(r.kind == "words" for r in table.rules)
    return skills, {
        "router_skill": ROUTER_SKILL,
        "word_rules": words,
        "default": list(table.default),
        "hinted": sorted(n for n, h in hints.items() if h),
    }


def routing_hints(table: RoutingTable) -> dict[str, str]:
    """Per skill: one sentence of when to use it and with which skills, from the word rules
    (a TEXT rule pins one training task: no help on new tasks) and the default."""
    clauses: dict[str, list[str]] = {}
    for rule in table.rules:
        if rule.kind == "words":
            for name in rule.skills:
                words = " and ".join(rule.pattern)
                clauses.setdefault(name, []).append(
                    f"tasks that mention {words}{_with(rule.skills, name)}"
                )
    for name in table.default:
        clauses.setdefault(name, []).append(f"any other task{_with(table.default, name)}")
    return {
        name: "Use it for " + "; ".join(found[:CLAUSES_SHOWN]) + "."
        for name, found in clauses.items()
    }


def _with(skills: tuple[str, ...], name: str) -> str:
    others = [s for s in skills if s != name]
    return f" (with {', '.join(others)})" if others else ""


def with_hint(skill: Skill, hint: str) -> Skill:
    """`skill` with `hint` after its description (the original cut to make room), and every
    front-matter string cleaned."""
    hint = clean_description(hint) if hint else ""
    room = DESCRIPTION_MAX - (len(hint) + 1 if hint else 0)
    base = clean_description(skill.description, limit=max(room, DESCRIPTION_MAX // 2))
    text = f"{base} {hint}" if hint else base
    return skill.model_copy(
        update={
            "description": clean_description(text),
            "metadata": string_metadata(skill.metadata),
            "compatibility": clean_description(skill.compatibility, limit=500)
            if skill.compatibility
            else None,
        }
    )


def router_skill(
    table: RoutingTable, pool: Pool, summary: Mapping[str, Any], provenance: str
) -> Skill:
    """The router skill: the table as instructions an agent follows."""
    k = table.k
    lines = [
        "# Skill router",
        "",
        f"The skills in this folder were optimized to work in combinations of {k}, chosen "
        "per task. Pick the combination for the task at hand with the rules below, then read "
        "and follow only those skills.",
        "",
        "## Rules (the first that matches wins)",
        "",
    ]
    n = 0
    for rule in table.rules:
        if rule.kind != "words":
            continue
        n += 1
        words = ", ".join(f'"{w}"' for w in rule.pattern)
        lines.append(f"{n}. If the task contains the words {words}: use {', '.join(rule.skills)}.")
    if n == 0:
        lines.append("(no rule: use the default skills for every task)")
    lines += [
        "",
        "Words match whole words, in any case.",
        "",
        "## Otherwise",
        "",
        f"Use {', '.join(table.default)}.",
        "",
        "## The skills",
        "",
        *(f"- {s.name}: {clean_description(s.description)}" for s in pool.skills),
        "",
        "## Where this comes from",
        "",
        f"Derived from {provenance}: these rules route {summary.get('agreeing', 0)} of "
        f"{summary.get('gate_decisions', 0)} training tasks as moscopt's trained gate did.",
    ]
    return Skill(
        name=ROUTER_SKILL,
        description=ROUTER_DESCRIPTION,
        body="\n".join(lines),
        metadata={"origin": "moscopt-router"},
    )
