"""Near-duplicate requests are grouped as comparing each with every group's first would group
them (`moscopt.learn.mine.group` filters by prefixes; the answer must not change)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.learn.corrections import words
from moscopt.learn.mine import SAME_REQUEST, Exchange, group


def brute_force(items: list[Exchange]) -> list[list[Exchange]]:
    groups: list[list[Exchange]] = []
    for ex in items:
        here = words(ex.request)
        for g in groups:
            first = words(g[0].request)
            shared = len(here & first)
            if here and first and shared >= SAME_REQUEST * len(here | first):
                g.append(ex)
                break
        else:
            groups.append([ex])
    return groups


def exchange(text: str) -> Exchange:
    return Exchange(session=None, request=text, context="")  # type: ignore[arg-type]


VOCAB = ["report", "format", "table", "summary", "owner", "risks", "deadline", "budget",
         "chart", "python", "script", "tests", "release", "notes", "changelog", "docs"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(VOCAB), max_size=8), max_size=40))
def test_prefix_filtered_grouping_equals_brute_force(requests: list[list[str]]) -> None:
    items = [exchange(" ".join(r)) for r in requests]
    found = group(items)
    assert [[id(e) for e in g] for g in found] == [[id(e) for e in g] for g in brute_force(items)]


def test_requests_sharing_common_words_still_group_by_their_own() -> None:
    """Each request: eight words of its own and five every request has (Jaccard 5/21 between
    two): one group each, and a repeat joins its own."""
    tail = " fix the report format table please"
    own = [" ".join(f"{w}{i}" for w in ("alpha", "beta", "gamma", "delta", "eps", "zeta",
                                         "eta", "theta")) for i in range(30)]  # fmt: skip
    items: list[Any] = [exchange(o + tail) for o in own] + [exchange(own[7] + tail)]
    groups = group(items)
    assert len(groups) == 30 and [len(g) for g in groups].count(2) == 1
    assert groups[7][1] is items[-1]
