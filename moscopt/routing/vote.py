"""The paper's aggregator (CERA-MoA): familiarity-weighted majority vote over the answers of the
top skills run as separate agents, for tasks with a deterministic answer.

The decision rule only; `moscopt.routing.voting` runs the top m skills as separate agents
(`agent.aggregate: vote`, m agent calls per task) and applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def familiarity_vote(
    answers: Sequence[str | None],
    familiarity: Sequence[float],
    canonical: Callable[[str], str] = lambda a: " ".join(a.split()).lower(),
) -> int | None:
    """The index of the answer to keep: the answers are grouped by `canonical` form, the group
    with the largest summed familiarity wins (ties: the group holding the most familiar
    member, then the earliest), and its most familiar member is returned. None when no
    answer could be extracted."""
    if len(answers) != len(familiarity):
        raise ValueError("one familiarity per answer")
    groups: dict[str, list[int]] = {}
    for i, answer in enumerate(answers):
        if answer is not None:
            groups.setdefault(canonical(answer), []).append(i)
    if not groups:
        return None

    def weight(members: list[int]) -> tuple[float, float, int]:
        return (
            sum(familiarity[i] for i in members),
            max(familiarity[i] for i in members),
            -members[0],
        )

    winner = max(groups.values(), key=weight)
    return max(winner, key=lambda i: (familiarity[i], -i))
