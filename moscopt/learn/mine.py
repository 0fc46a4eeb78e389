"""Mine tasks with judges from harvested sessions, deterministically (no model).

1. `exchanges`: each session is cut into requests, each with the answer it got and what the
   user said next about it (corrections and re-asks, `moscopt.learn.corrections`).
2. `group`: requests that ask the same thing (near-duplicates, across sessions) are merged.
3. Each group with at least one requirement becomes a task: the request as the user wrote it
   (the most recent wording), the conversation before it as context, and a judge: a rule judge
   when every requirement is a literal check, a rubric when none is, and when both kinds were
   said, a rubric whose criteria include the checks' descriptions (the task file has one judge
   per task; the checks are kept in `checks` metadata for the user to promote). Requirements
   the user contradicted (contains X and not_contains X; a criterion and its negation) are
   dropped, both.

The result is `MinedTask`s; `moscopt.learn.taskfile` writes them with their split.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from moscopt.learn.corrections import Requirement, jaccard, kind_of, requirements, words
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
    group's first request at least `SAME_REQUEST`; the earliest such group), in order of first
    appearance.

    Prefix filtering (the all-pairs similarity join's): with each request's words ordered
    rarest first, two requests at Jaccard >= t share a word among the first
    n - ceil(t n) + 1 of each, so only groups whose first request has one of those words in its
    own such prefix are compared. On 4,400 requests (12 words of their own from 3,000, the same
    5 at the end, 400 repeats) grouping took 1.2 s where comparing each with every group took
    27 s; 1,100: 0.09 s against 2.3 s (`python scripts/bench_harvest.py --grouping --n 1000
    4000`, load 6); the mine of `--n 1000` sessions, 0.87 s before, 0.23 s."""
    found = [words(ex.request) for ex in items]
    rarity = Counter(w for here in found for w in here)
    groups: list[list[Exchange]] = []
    firsts: list[set[str]] = []
    index: dict[str, list[int]] = {}
    for ex, here in zip(items, found, strict=True):
        prefix = sorted(here, key=lambda w: (rarity[w], w))
        prefix = prefix[: len(prefix) - math.ceil(SAME_REQUEST * len(prefix)) + 1]
        candidates = sorted({g for w in prefix for g in index.get(w, ())})
        joined = next((g for g in candidates if jaccard(here, firsts[g]) >= SAME_REQUEST), None)
        if joined is not None:
            groups[joined].append(ex)
            continue
        groups.append([ex])
        firsts.append(here)
        for w in prefix:
            index.setdefault(w, []).append(len(groups) - 1)
    return groups


def consistent(found: list[Requirement]) -> tuple[list[Requirement], int]:
    """`found` deduplicated, without requirements the user contradicted; and how many went.
    A contradiction is a literal both required and banned (contains X, not_contains X), or two
    criteria that say the same thing but one of them negated ("Use bullet points." and "Don't
    use bullet points.": `polarity`)."""
    by_key: dict[str, Requirement] = {}
    for r in found:
        by_key.setdefault(r.key, r)
    contains = {k.split(":", 1)[1] for k in by_key if k.startswith("contains:")}
    banned = {k.split(":", 1)[1] for k in by_key if k.startswith("not_contains:")}
    clash = contains & banned
    said = {k: polarity(r.criterion) for k, r in by_key.items() if r.criterion is not None}
    opposed = {
        k
        for k, (sign, content) in said.items()
        for other, (other_sign, other_content) in said.items()
        if sign != other_sign and len(content) >= 2 and jaccard(content, other_content) >= 0.8
    }
    kept = [
        r
        for k, r in by_key.items()
        if k not in opposed
        and not (k.split(":", 1)[0] in ("contains", "not_contains") and k.split(":", 1)[1] in clash)
    ]
    return kept, len(by_key) - len(kept)


_NEGATIONS = frozenset({"not", "no", "never", "avoid", "without", "nor", "stop"})
_NOT = re.compile(r"n['\u2019]t\b")  # don't, doesn't, won't (straight or curly)


def polarity(criterion: str) -> tuple[bool, set[str]]:
    """(whether `criterion` is said negated, an odd number of negations; its content words
    without them): "Don't use tables." is (True, {use, tables})."""
    said = words(_NOT.sub(" not", criterion.lower()))
    return sum(w in _NEGATIONS for w in said) % 2 == 1, said - _NEGATIONS


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
