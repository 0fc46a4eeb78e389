from __future__ import annotations

from moscopt.embedding.hashing import HashingEmbedder
from moscopt.extensions.niches.archive import Archive, insight_id
from moscopt.extensions.niches.records import Insight, NicheState


def entry(
    text: str, niche: str = "A", kind: str = "niche", key: str = "", giver: str = "g"
) -> Insight:
    return Insight(
        id=insight_id(kind, niche, text),
        kind=kind,
        niche=niche,
        text=text,  # type: ignore[arg-type]
        givers=[giver],
        key=key,
    )


def archive(capacity: int = 10) -> Archive:
    return Archive(NicheState(), HashingEmbedder(numbers=True), dedup=0.9, capacity=capacity)


def test_niche_lessons_are_retrieved_by_similarity_to_the_task_within_the_niche() -> None:
    a = archive()
    a.add(entry("Draw the figure first.", key="triangle with sides 3 4 5 find its area"))
    a.add(entry("Count days modulo seven.", key="what weekday is 40 days after monday"))
    a.add(entry("Reverse the digits.", niche="B", key="triangle with sides 3 4 5 find its area"))
    a.add(entry("Check the units at the end.", kind="meta", key="anything"))
    lessons, meta = a.retrieve("A", "a triangle has sides 5 12 13: find its area", 1)
    assert [e.text for e in lessons] == ["Draw the figure first."]
    lessons, _ = a.retrieve("A", "which weekday is 10 days after friday", 2)
    assert [e.text for e in lessons] == ["Count days modulo seven.", "Draw the figure first."]
    assert [e.text for e in meta] == ["Check the units at the end."]  # kept apart, any niche
    assert a.retrieve("C", "a triangle", 3) == (
        [],
        [e for e in a.state.archive if e.kind == "meta"],
    )


def test_near_duplicates_merge_and_keep_every_giver() -> None:
    a = archive()
    first, new = a.add(entry("Before adding, reverse the digits of each number.", giver="alpha"))
    again, new2 = a.add(entry("before adding reverse the digits of each number", giver="gamma"))
    assert new and not new2 and again is first
    assert first.merged == 2 and first.givers == ["alpha", "gamma"]
    _, other_niche = a.add(entry("Before adding, reverse the digits of each number.", niche="B"))
    _, other_kind = a.add(entry("Before adding, reverse the digits of each number.", kind="meta"))
    _, different = a.add(entry("Draw the figure before computing anything."))
    assert other_niche and other_kind and different and len(a.state.archive) == 4


def test_past_capacity_the_oldest_unmerged_entry_goes() -> None:
    a = archive(capacity=2)
    kept, _ = a.add(entry("one lesson about triangles"))
    a.add(entry("one lesson about triangles!"))  # merged: kept is now worth two
    a.add(entry("a lesson about dates"))
    a.add(entry("a lesson about units"))
    assert [e.text for e in a.state.archive] == [
        "one lesson about triangles",
        "a lesson about units",
    ]
    assert a.get(kept.id) is kept
