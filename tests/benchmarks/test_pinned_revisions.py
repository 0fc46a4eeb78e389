"""Issue 17, section 7: every hub source of a built-in benchmark is pinned to a commit."""

from __future__ import annotations

import re

from moscopt.benchmarks import get_benchmark, list_benchmarks

COMMIT = re.compile(r"[0-9a-f]{40}")


def test_every_hub_source_is_pinned_to_a_full_commit_sha() -> None:
    for bench in list_benchmarks():
        for hub in bench.spec.source.hub:
            assert COMMIT.fullmatch(hub.revision), f"{bench.name}: {hub.path}@{hub.revision}"


def test_gpqa_and_the_matharena_aime_sets_use_the_commits_other_projects_pin() -> None:
    (gpqa,) = get_benchmark("gpqa-diamond").spec.source.hub
    assert (gpqa.path, gpqa.revision) == (
        "Idavidrein/gpqa",
        "633f5ee89ab8ad4522a9f850766b73f62147ffdd",
    )
    pins = {h.path: h.revision for h in get_benchmark("aime").spec.source.hub}
    assert pins["MathArena/aime_2025"] == "c94da77eb22bbd6439e62a323bec18493a421302"
    assert pins["MathArena/aime_2026"] == "d2de22f3c656b4f56cf8981212186377d1e23bc3"
