"""The report's run-health views (moscopt.report.sections) and the self-contained HTML page."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.report.sections import (
    activations_by_niche,
    fallback_note,
    gate_fallback,
    q_over_time,
)
from moscopt.run.ledger import RolloutEvent
from moscopt.run.rundir import RunDir

runner = CliRunner()


def rollout(task: str, skills: list[str], reward: float, *, batch: int = 0, source: str = "gate"):  # type: ignore[no-untyped-def]
    return RolloutEvent(
        batch=batch, step=batch, phase="skills", task_id=task, skills=skills,
        activation=source, reward=reward,
    )  # fmt: skip


def test_gate_fallback_rate_and_the_json_hint() -> None:
    rollouts = [rollout("a", ["x"], 1, source=s) for s in ("gate", "fallback", "partial", "all")]
    assert gate_fallback(rollouts) == (2, 3)  # `all` is no gate answer
    note = fallback_note(2, 3, constrained=False)
    assert note is not None and "gating.output: json" in note and "67%" in note
    assert fallback_note(1, 10, False) is None and fallback_note(0, 0, False) is None
    # a gate already under a JSON schema is not told to use one
    constrained = fallback_note(2, 3, constrained=True)
    assert constrained is not None and "gating.output: json" not in constrained
    assert "response_format" in constrained


def test_q_over_time_replays_the_ema_per_minibatch() -> None:
    rollouts = [
        rollout("a", ["x", "y"], 1.0, batch=0),
        rollout("b", ["x"], 0.0, batch=0),
        rollout("c", ["x"], 1.0, batch=1),
    ]
    curves = q_over_time(rollouts, beta=0.5)  # from the prior 0.5, as the trainer does
    assert curves["x"] == [(0, 0.5), (1, 0.75)] and curves["y"] == [(0, 0.75)]
    assert q_over_time(rollouts, beta=0.5, prior=0.0)["y"] == [(0, 0.5)]


def test_the_q_curve_ends_at_the_q_status_shows(scripted_run: RunDir, tmp_path: Path) -> None:
    """One source: the report's "Q-scores over time" ends where "Final pool" and `status` are
    (it had replayed from a skill's first mean, not from the prior: 0.333 against 0.450)."""
    out = tmp_path / "r.md"
    assert (
        runner.invoke(app, ["report", "--run", str(scripted_run.path), "-o", str(out)]).exit_code
        == 0
    )
    md = out.read_text()
    section = md[md.index("## Q-scores over time") : md.index("## Activations by task niche")]
    final = md[md.index("## Final pool") :]
    state = scripted_run.load_state()
    for name, q in state.q.items():
        assert (
            f"| {name} | " in section
            and f" | {q:.3f} | " in section.split(f"| {name} | ")[1].split("\n")[0]
        )
        assert f"| {name} | {q:.3f} |" in final


def test_activations_by_niche_count_every_selection() -> None:
    rollouts = [rollout("a", ["x", "y"], 1), rollout("b", ["x"], 0), rollout("c", ["y"], 0)]
    skills, niches, counts = activations_by_niche(rollouts, {"a": "dates", "b": "sums"})
    assert (skills, niches) == (["x", "y"], ["all", "dates", "sums"])
    assert counts == {("x", "dates"): 1, ("y", "dates"): 1, ("x", "sums"): 1, ("y", "all"): 1}


def test_the_report_shows_the_run_views_and_the_html_stands_alone(
    scripted_run: RunDir, tmp_path: Path
) -> None:
    md_out, html_out = tmp_path / "r.md", tmp_path / "page" / "r.html"
    assert (
        runner.invoke(app, ["report", "--run", str(scripted_run.path), "-o", str(md_out)]).exit_code
        == 0
    )
    md = md_out.read_text()
    for heading in (
        "## Run health",
        "## Q-scores over time",
        "## Activations by task niche",
        "## Synergy",
    ):
        assert heading in md, heading
    assert "| gate fallback rate | " in md and "| acceptance rate | 1/" in md
    assert "| careful-computation | " in md.split("## Q-scores over time")[1]
    linked = re.findall(r"!\[[^]]*\]\(([^)]+)\)", md)
    assert linked and all((tmp_path / name).is_file() for name in linked)
    result = runner.invoke(
        app, ["report", "--run", str(scripted_run.path), "--html", "-o", str(html_out)]
    )
    assert result.exit_code == 0, result.output
    html = html_out.read_text()
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(sources) >= 3 and all(s.startswith("data:image/svg+xml;base64,") for s in sources)


def test_an_evolution_cycle_shows_how_its_diversity_was_measured() -> None:
    from moscopt.cli.status import diversity_words
    from moscopt.report.tables import evolution_table
    from moscopt.run.entries import EvolutionEntry

    note = {"kind": "diversity", "similarity": 0.6234, "method": "difflib", "threshold": 0.6}
    cycle = EvolutionEntry(step=4, epoch=1, accepted=True, before=0.5, after=0.6, changes=[note])
    assert cycle.diversity == {"similarity": 0.6234, "method": "difflib", "threshold": 0.6}
    assert cycle.to_json()["diversity"]["method"] == "difflib"  # in `status --json`
    words = diversity_words(cycle.to_json()["diversity"])
    assert words == "pool similarity 0.62 by difflib (rediversified above 0.60)"
    _, head, rows = evolution_table([cycle])
    assert rows[0][head.index("similarity")] == "0.62 difflib / 0.60"
    bare = EvolutionEntry(step=1, epoch=0, accepted=False, before=None, after=None, changes=[])
    assert bare.diversity is None and evolution_table([bare])[2][0][head.index("similarity")] == "-"
