from __future__ import annotations

from moscopt.extensions.niches.competence import observe
from moscopt.extensions.niches.records import NAME, Insight, NicheState, Routed
from moscopt.extensions.niches.summary import niche_summary, summary_lines
from moscopt.run.state import RunState


def test_the_summary_shows_competence_channels_and_specialization() -> None:
    assert niche_summary(RunState(), ["a"]) is None
    ns = NicheState(source="field:subject")
    observe(ns, "A", ["alpha"], 1.0, beta=0.3)
    observe(ns, "B", ["beta"], 0.0, beta=0.3)
    observe(ns, "B", ["gone"], 1.0, beta=0.3)
    ns.routed = {"alpha>beta": 2, "alpha>gamma": 1}
    ns.adopted = {"alpha>beta": 1}
    ns.archive = [Insight(id="i", kind="niche", niche="A", text="t")]
    ns.pending = {"gamma": [Routed(insight="i", giver="alpha", niche="A")]}
    state = RunState()
    state.keep(NAME, ns.model_dump(mode="json"))
    summary = niche_summary(state, ["alpha", "beta", "gamma"])
    assert summary is not None
    assert summary["competence"] == {"alpha": {"A": [1.0, 1]}, "beta": {"B": [0.0, 1]}}
    assert summary["channels"] == [
        {"giver": "alpha", "recipient": "beta", "routed": 2, "adopted": 1},
        {"giver": "alpha", "recipient": "gamma", "routed": 1, "adopted": 0},
    ]
    assert summary["archive"] == {"niche": 1, "meta": 0} and summary["pending"] == {"gamma": 1}
    assert summary["specialization_index"] == 1.0
    lines = summary_lines(summary)
    assert lines[0].startswith("niches (field:subject): A, B; specialization index 1.000")
    assert "  alpha -> beta: 2 routed, 1 adopted" in lines
    assert "  alpha: A 1.00 (1)" in lines
