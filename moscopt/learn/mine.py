"""Mine tasks with judges from harvested sessions, deterministically (no model).

1. `exchanges`: each session is cut into requests, each with the answer it got and what the
   user said next about it (corrections and re-asks, `moscopt.learn.corrections`).
2. `group`: requests that ask the same thing (near-duplicates, across sessions) are merged.
3. Each group with at least one requirement becomes a task: the request as the user wrote it
   (the most recent wording), the conversation before it as context, and a judge: a rule judge
   when every requirement is a literal check, a rubric when none is, and when both kinds were
   said, a rubric whose criteria include the checks' descriptions (the task file has one judge
   per task; the checks are kept in `checks` metadata for the user to promote). Requirements
   the user contradicted (contains X and not_contains X) are dropped, both.

The result is `MinedTask`s; `moscopt.learn.taskfile` writes them with their split.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from moscopt.learn.corrections import Requirement, kind_of, requirements, words
from moscopt.learn.secrets import limit
from moscopt.learn.sessions import Session

MAX_TASK_CHARS = 4000
MAX_CONTEXT_CHARS = 3000
CONTEXT_TURNS = 4
SAME_REQUEST = 0.5  # content-word Jaccard at which two requests are one task


@dataclass
class Exchange:
    session: Session
    request: str
    context: str
    answer: str = ""
    corrections: list[str] = field(default_factory=list)
    reasks: int = 0
    found: list[Requirement] = field(default_factory=list)


def _context(turns: list[Any]) -> str:
    parts = [f"{'User' if t.role == 'user' else 'Assistant'}: {t.text}" for t in turns]
    return limit("\n\n".join(parts), MAX_CONTEXT_CHARS)


def exchanges(session: Session) -> list[Exchange]:
    """The requests of `session`, each with its answer and the user's reaction to it."""
    out: list[Exchange] = []
    current: Exchange | None = None
    for i, turn in enumerate(session.turns):
        if turn.role == "assistant":
            if current is not None and not current.answer:
                current.answer = turn.text
            continue
        kind = kind_of(turn.text, current.request if current else None)
        if current is not None and current.answer and kind == "reask":
            current.reasks += 1
        elif current is not None and current.answer and kind == "correction":
            current.corrections.append(turn.text)
            current.found.extend(requirements(turn.text, current.answer))
        else:
            context = _context(session.turns[max(0, i - CONTEXT_TURNS) : i])
            current = Exchange(session, turn.text, context)
            out.append(current)
    return out


@dataclass
class MinedTask:
    task_id: str
    task: str
    context: str
    judge: dict[str, Any]
    meta: dict[str, Any]


def group(items: list[Exchange]) -> list[list[Exchange]]:
    """`items` in groups of near-duplicate requests (content-word Jaccard similarity to the
    group's first request at least `SAME_REQUEST`), in order of first appearance."""
    groups: list[list[Exchange]] = []
    firsts: list[set[str]] = []
    for ex in items:
        here = words(ex.request)
        for g, first in zip(groups, firsts, strict=True):
            if here and first and len(here & first) >= SAME_REQUEST * len(here | first):
                g.append(ex)
                break
        else:
            groups.append([ex])
            firsts.append(here)
    return groups


def consistent(found: list[Requirement]) -> tuple[list[Requirement], int]:
    """`found` deduplicated, without requirements the user contradicted; and how many went."""
    by_key: dict[str, Requirement] = {}
    for r in found:
        by_key.setdefault(r.key, r)
    contains = {k.split(":", 1)[1] for k in by_key if k.startswith("contains:")}
    banned = {k.split(":", 1)[1] for k in by_key if k.startswith("not_contains:")}
    clash = contains & banned
    kept = [
        r
        for k, r in by_key.items()
        if not (k.split(":", 1)[0] in ("contains", "not_contains") and k.split(":", 1)[1] in clash)
    ]
    return kept, len(by_key) - len(kept)


def judge_of(found: list[Requirement]) -> dict[str, Any]:
    checks = [r.check for r in found if r.check is not None]
    criteria = [r.criterion for r in found if r.criterion is not None]
    if checks and not criteria:
        return {"kind": "rule", "checks": checks, "scoring": "fraction"}
    described = [f"{c['description'][:1].upper()}{c['description'][1:]}." for c in checks]
    return {"kind": "rubric", "criteria": [*criteria, *described], "scoring": "fraction"}


def task_id(source: str, request: str) -> str:
    digest = hashlib.sha256(" ".join(sorted(request.lower().split())).encode()).hexdigest()
    return f"{source}-{digest[:12]}"


def to_task(g: list[Exchange], found: list[Requirement], dropped: int, miner: str) -> MinedTask:
    first, last = g[0], g[-1]
    checks = [r.check for r in found if r.check is not None]
    meta: dict[str, Any] = {
        "miner": miner,
        "source": first.session.source,
        "occurrences": len(g),
        "sessions": sorted({ex.session.id for ex in g}),
        "corrections": [limit(c, 300) for ex in g for c in ex.corrections][:10],
        "reasks": sum(ex.reasks for ex in g),
    }
    judge = judge_of(found)
    if judge["kind"] == "rubric" and checks:
        meta["checks"] = checks
    if dropped:
        meta["contradicted"] = dropped
    return MinedTask(
        task_id(first.session.source, first.request),
        limit(last.request, MAX_TASK_CHARS),
        last.context,
        judge,
        meta,
    )


@dataclass
class Mined:
    tasks: list[MinedTask]
    recurring: list[tuple[str, int]]  # requirement text, sessions it was said in (2+)
    contradictory: int = 0  # groups left without a judge by contradictions


def mine(sessions: list[Session], *, min_occurrences: int = 1) -> Mined:
    """Tasks (with judges) from `sessions`; see the module docstring."""
    items = [ex for s in sessions for ex in exchanges(s)]
    tasks: list[MinedTask] = []
    said_in: dict[str, set[str]] = {}
    label: dict[str, str] = {}
    contradictory = 0
    for g in group(items):
        found, dropped = consistent([r for ex in g for r in ex.found])
        for ex in g:
            for r in ex.found:
                said_in.setdefault(r.key, set()).add(ex.session.id)
                label.setdefault(r.key, r.criterion or str((r.check or {}).get("description")))
        if not found:
            contradictory += dropped > 0
            continue
        if len(g) + sum(len(ex.corrections) + ex.reasks for ex in g) < min_occurrences:
            continue
        tasks.append(to_task(g, found, dropped, "deterministic"))
    recurring = Counter({label[k]: len(v) for k, v in said_in.items() if len(v) >= 2})
    tasks.sort(key=lambda t: (-t.meta["occurrences"], t.task_id))
    return Mined(tasks, recurring.most_common(), contradictory)
