"""The report's plots for short runs: counts and cost start at zero, and a one-point series is
written as a value, not drawn as a dot on a meaningless axis."""

from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.report.page import write_report
from moscopt.report.plot import Curve, curve_figure
from moscopt.report.sections import draw_lines
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import make_run, scripted_lm, train_run

pytest.importorskip("matplotlib")


def curve(steps: int, calls: list[int], cost: list[float]) -> Curve:
    return Curve(
        val=[(0, 0.25)], accepted=[], rejected=[], steps=list(range(steps)), calls=calls,
        cost=cost, logged_calls=True,
    )  # fmt: skip


def texts(ax: object) -> list[str]:
    return [t.get_text() for t in ax.texts]  # type: ignore[attr-defined]


def test_calls_and_cost_axes_start_at_zero() -> None:
    fig = curve_figure(curve(3, [122, 130, 141], [0.0, 0.0, 0.0]))
    top, bottom, twin = fig.axes
    assert bottom.get_ylim()[0] == 0.0 and bottom.get_ylim()[1] >= 141  # step 0's 122 is seen
    assert twin.get_ylim() == (0.0, 1.0)  # no cost: from $0, not -0.04 to 0.04
    assert top.get_ylim() == (-0.05, 1.05)
    paid = curve_figure(curve(2, [5, 9], [0.01, 0.02])).axes[2]
    assert paid.get_ylim()[0] == 0.0 and paid.get_ylim()[1] == pytest.approx(0.021)


def test_a_one_step_run_shows_its_calls_as_a_value() -> None:
    fig = curve_figure(curve(1, [122], [0.5]))
    _, bottom = fig.axes
    assert not bottom.get_lines()
    assert texts(bottom) == ["122 LLM calls, $0.5000 (one step: no curve)"]


def test_a_lone_point_never_gets_a_sub_step_axis() -> None:
    import io

    from matplotlib.figure import Figure

    seen: list[tuple[float, float]] = []
    original = Figure.savefig

    def keep(self: Figure, *args: object, **kwargs: object) -> None:
        seen.append(self.axes[0].get_xlim())
        original(self, io.BytesIO(), format="png")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Figure, "savefig", keep)
        draw_lines({"a": [(3, 0.5)], "b": [(3, 0.2)]}, "step", "Q")
    assert seen == [(2.8, 4.2)]  # whole steps, not -0.045 to 0.045 around one


def test_the_q_plot_of_a_single_minibatch_is_a_sentence(tmp_path: Path, seed_dir: Path) -> None:
    run, config, bench, sp, seeds = make_run(
        tmp_path, seed_dir, **{"training.epochs": 1, "training.max_steps_per_epoch": 1}
    )
    train_run(run, config, bench, sp, seeds, scripted_lm())
    out = tmp_path / "report.md"
    write_report(RunDir.open(run.path), out)
    text = out.read_text()
    assert "## Q-scores over time" in text and "q-over-time.png" not in text
    assert "One skill-editing minibatch (step 0): no curve." in text
    assert "| careful-computation |" in text  # its value is in the table
