"""Deriving a static routing table from the gate's training decisions: per skill set, the words
that pick it out, as `IF WORDS ... THEN ACTIVATE: ...` rules and a DEFAULT.

Every derived rule is general: at most two words, found in at least `min_support` (2) training
tasks of one skill set and in no task routed otherwise. A task no such rule routes as the gate
did gets the DEFAULT and is counted (`unmatched`), never pinned by its own text: a rule that
copies one training task verbatim routes that task and nothing else (a `TEXT` rule, which
`RoutingTable` still reads, is for a person to write by hand)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moscopt.routing.table import STOPWORDS, RoutingTable, Rule, words

MAX_CANDIDATE_WORDS = 60  # per skill set, for pairs: bounds derivation to ~2k pair checks


@dataclass(frozen=True)
class Decision:
    """What the gate activated for one training task."""

    task_id: str
    text: str
    skills: tuple[str, ...]


@dataclass(frozen=True)
class Derivation:
    """The table and how well it reproduces the decisions it was learned from."""

    table: RoutingTable
    decisions: int
    by_words: int
    by_default: int
    unmatched: int  # no general rule routes them as the gate did: DEFAULT applies

    @property
    def agreeing(self) -> int:
        return self.by_words + self.by_default


def derive(
    decisions: Sequence[Decision], default: tuple[str, ...], *, min_support: int = 2
) -> Derivation:
    """Learn a routing table whose DEFAULT is `default` from the gate's `decisions`.

    Deterministic: the same decisions (in any order) give the same table.
    """
    examples = sorted(decisions, key=lambda d: d.task_id)
    tokens = {d.task_id: _keywords(d.text) for d in examples}
    remaining = [d for d in examples if d.skills != default]
    by_default = len(examples) - len(remaining)
    rules: list[Rule] = []
    while True:
        best = _best_rule(remaining, examples, default, tokens, min_support)
        if best is None:
            break
        rule, covered = best
        rules.append(rule)
        remaining = [d for d in remaining if d.task_id not in covered]
    table = RoutingTable(tuple(rules), default, by_default)
    return Derivation(
        table,
        decisions=len(examples),
        by_words=len(examples) - by_default - len(remaining),
        by_default=by_default,
        unmatched=len(remaining),
    )


def _keywords(text: str) -> frozenset[str]:
    return frozenset(
        w for w in words(text) if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS
    )


def _best_rule(
    remaining: Sequence[Decision],
    examples: Sequence[Decision],
    default: tuple[str, ...],
    tokens: dict[str, frozenset[str]],
    min_support: int,
) -> tuple[Rule, set[str]] | None:
    """The WORDS rule (≤ 2 words) routing the most remaining tasks of one skill set and none of
    another; ties: fewer words, then alphabetical. Default-routed tasks count as 'another'."""
    # Tasks still routed by later lines: the remaining non-default ones and every default one.
    live = [*remaining, *(d for d in examples if d.skills == default)]
    bits = {d.task_id: 1 << i for i, d in enumerate(live)}
    Key = tuple[int, int, tuple[str, ...], tuple[str, ...]]
    best: tuple[Key, Rule, set[str]] | None = None
    for label in sorted({d.skills for d in remaining}):
        pos = [d for d in live if d.skills == label]
        if len(pos) < min_support:
            continue
        pos_mask: dict[str, int] = {}
        neg_mask: dict[str, int] = {}
        for d in live:
            target = pos_mask if d.skills == label else neg_mask
            for w in tokens[d.task_id]:
                target[w] = target.get(w, 0) | bits[d.task_id]
        frequent = sorted(
            (w for w, m in pos_mask.items() if m.bit_count() >= min_support),
            key=lambda w: (-pos_mask[w].bit_count(), w),
        )[:MAX_CANDIDATE_WORDS]
        candidates: list[tuple[str, ...]] = [(w,) for w in frequent]
        candidates += [
            tuple(sorted((a, b))) for i, a in enumerate(frequent) for b in frequent[i + 1 :]
        ]
        for conj in candidates:
            p, n = -1, -1
            for w in conj:
                p &= pos_mask[w]
                n &= neg_mask.get(w, 0)
            support = p.bit_count()
            if n != 0 or support < min_support:
                continue
            key: Key = (-support, len(conj), label, conj)  # smaller is better
            if best is None or key < best[0]:
                covered = {d.task_id for d in pos if bits[d.task_id] & p}
                best = (key, Rule("words", conj, label, support), covered)
    if best is None:
        return None
    return best[1], best[2]
