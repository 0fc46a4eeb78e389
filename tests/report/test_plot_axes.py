"""The report's charts (SVG, `moscopt.report.plot`): counts and cost start at zero, a one-point
series is written as a value, not drawn as a dot on a meaningless axis, text is escaped, and the
same data gives the same bytes."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from moscopt.report.page import write_report
from moscopt.report.plot import Curve, draw_curve, draw_heatmap, draw_lines, step_limits
from moscopt.report.svg import ticks
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import make_run, scripted_lm, train_run

SVG = "{http://www.w3.org/2000/svg}"


def curve(steps: int, calls: list[int], cost: list[float]) -> Curve:
    return Curve(
        val=[(0, 0.25)], accepted=[], rejected=[], steps=list(range(steps)), calls=calls,
        cost=cost, logged_calls=True,
    )  # fmt: skip


def texts(svg: bytes) -> list[str]:
    return [t.text or "" for t in ElementTree.fromstring(svg).iter(f"{SVG}text")]


def axis(svg: bytes, side: str, below: float = 0.0) -> list[float]:
    """The tick labels of the left or right axis of the panel that starts below `below` px."""
    found = []
    for t in ElementTree.fromstring(svg).iter(f"{SVG}text"):
        x, y = float(t.get("x", 0)), float(t.get("y", 0))
        if t.get("transform") or y < below:
            continue
        if (side == "left" and t.get("text-anchor") == "end" and x < 80) or (
            side == "right" and x > 670
        ):
            found.append(float(t.text or "nan"))
    return found


def test_calls_and_cost_axes_start_at_zero() -> None:
    svg = draw_curve(curve(3, [122, 130, 141], [0.0, 0.0, 0.0]))
    score, calls = axis(svg, "left"), axis(svg, "left", below=300)
    assert score[:6] == [0, 0.2, 0.4, 0.6, 0.8, 1.0]  # on -0.05..1.05: 0 and 1 stay visible
    assert calls[0] == 0 and calls[-1] >= 100  # from zero: step 0's 122 is seen
    assert axis(svg, "right") == [0, 0.2, 0.4, 0.6, 0.8, 1.0]  # no cost: $0 to 1, not -0.04
    paid = axis(draw_curve(curve(2, [5, 9], [0.01, 0.02])), "right")
    assert paid[0] == 0 and 0.015 <= paid[-1] <= 0.021


def test_a_one_step_run_shows_its_calls_as_a_value() -> None:
    svg = draw_curve(curve(1, [122], [0.5]))
    assert "122 LLM calls, $0.5000 (one step: no curve)" in texts(svg)
    assert "cumulative calls" not in texts(svg)
    unlogged = Curve([], [], [], [0, 1], [0, 0], [0.0, 0.0], logged_calls=False)
    assert "no LLM calls logged" in texts(draw_curve(unlogged))


def test_a_lone_point_never_gets_a_sub_step_axis() -> None:
    svg = draw_lines({"a": [(3, 0.5)], "b": [(3, 0.2)]}, "step", "Q")
    centred = [
        t.text
        for t in ElementTree.fromstring(svg).iter(f"{SVG}text")
        if t.get("text-anchor") == "middle"
    ]
    steps = [t for t in centred if t not in ("step", "Q")]
    assert steps == ["3", "4"]  # whole steps around the point, not -0.045 to 0.045
    assert step_limits([3]) == (2.8, 4.2)


def test_ticks_are_round_and_whole_where_asked() -> None:
    assert ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert ticks(0, 1027, integer=True) == [0, 250, 500, 750, 1000]
    assert ticks(0, 3, integer=True) == [0, 1, 2, 3]
    assert ticks(0, 0.021) == [0.0, 0.005, 0.01, 0.015, 0.02]


def test_names_are_escaped_and_the_bytes_are_a_function_of_the_data() -> None:
    name = '<script>alert("x")</script> & co'
    lines = draw_lines({name: [(0, 0.5), (1, 0.7)]}, "step", "Q")
    heat = draw_heatmap([name], ["a&b"], {(name, "a&b"): 3})
    for svg in (lines, heat):
        assert b"<script>" not in svg
        assert name in texts(svg)  # well-formed XML that reads back as the name
    assert "a&b" in texts(heat) and "3" in texts(heat)
    assert draw_lines({name: [(0, 0.5), (1, 0.7)]}, "step", "Q") == lines
    again = draw_curve(curve(3, [1, 2, 3], [0.0, 0.1, 0.2]))
    assert again == draw_curve(curve(3, [1, 2, 3], [0.0, 0.1, 0.2]))


def test_the_q_plot_of_a_single_minibatch_is_a_sentence(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"training.epochs": 1, "training.max_steps_per_epoch": 1}
    )
    train_run(run, config, bench, sp, seeds, scripted_lm())
    out = tmp_path / "report.md"
    write_report(RunDir.open(run.path), out)
    text = out.read_text()
    assert "## Q-scores over time" in text and "q-over-time.svg" not in text
    assert "One skill-editing minibatch (step 0): no curve." in text
    assert "| careful-computation |" in text  # its value is in the table
