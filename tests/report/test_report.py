"""`moscopt report` on a run trained and evaluated through the command line."""

from __future__ import annotations

import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.report.page import learning_curve
from moscopt.run.history import CORE_KINDS, History
from moscopt.run.rundir import RunDir
from moscopt.testing import FakeServer
from moscopt.testing.scripted import MAGIC, server_responder, write_project

runner = CliRunner()


def without_time(text: str) -> str:
    return "\n".join(x for x in text.splitlines() if not x.startswith("Generated "))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    """A project trained (one epoch, two steps) and evaluated in two modes on its test split."""
    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    with FakeServer(responder=server_responder) as server:
        common = [
            "--model",
            "openai/scripted",
            "--api-base",
            server.url,
            "--data",
            "addition.jsonl",
        ]
        args = [
            "train", "--benchmark", "addition.yaml", *common, "--n", "3", "--k", "2",
            "--epochs", "1", "--steps-per-epoch", "2", "--run", "runs/r1", "--no-evolution",
        ]  # fmt: skip
        train = runner.invoke(app, args)
        assert train.exit_code == 0, train.output
        for mode in ("mixture", "none"):
            args = ["eval", "--run", "runs/r1", "--split", "test", "--mode", mode, *common[:4]]
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output
    return tmp_path


def test_report_markdown_plot_mode_table_and_curve(project: Path) -> None:
    result = runner.invoke(app, ["report", "--run", "runs/r1"])
    assert result.exit_code == 0, result.output
    md = (project / "runs/r1/report.md").read_text()
    svg = project / "runs/r1/report-curve.svg"
    assert result.stdout.splitlines() == [
        f"report: {Path('runs/r1/report.md')}",
        f"plot: {svg.relative_to(project)}",
    ]
    drawn = ElementTree.fromstring(svg.read_bytes())  # well-formed SVG
    assert drawn.tag == "{http://www.w3.org/2000/svg}svg" and svg.stat().st_size > 2_000
    assert md.startswith("# moscopt report: r1\n")
    assert "![learning curve](report-curve.svg)" in md
    assert "| validation score | 0.000 -> 1.000 (best 1.000) |" in md
    assert "| certificate (held-out tasks) | NO DETECTABLE DIFFERENCE from the seed pool" in md
    assert "| accepted | 0.000 -> 1.000 | " in md and " sample(s), +1.000 [" in md  # evidence
    assert f"| add at end: '{MAGIC}' |" in md
    assert "| rejected | 0.000 -> 0.000 |" in md
    # the comparison of evaluated modes, from exports/eval-*.jsonl
    assert "| mode | benchmark | split | score | 95% CI | tasks | repeats | calls | cost |" in md
    assert "| mixture | addition | test | 1.000 | 0.342-1.000 | 2 | 1 |" in md
    assert "| none | addition | test | 0.000 | 0.000-0.658 | 2 | 1 |" in md
    assert "| careful-computation | " in md.split("## Final pool")[1]

    # deterministic apart from the generation time
    again = runner.invoke(app, ["report", "--run", "runs/r1", "-o", "again.md"])
    assert again.exit_code == 0, again.output
    copy = (project / "again.md").read_text().replace("](again-", "](report-")
    assert without_time(copy) == without_time(md)
    assert (project / "again-curve.svg").read_bytes() == svg.read_bytes()

    page = runner.invoke(app, ["report", "--run", "runs/r1", "--html", "-o", "pages"])
    assert page.exit_code == 0, page.output
    html = (project / "pages/report.html").read_text()
    assert (project / "pages/report-curve.svg").is_file()
    assert (
        html.startswith("<!DOCTYPE html>")
        and '<img alt="learning curve" src="data:image/svg+xml;base64,' in html  # self-contained
    )
    assert "<td>mixture</td>" in html and "&#x27;" in html  # cells are escaped

    # the curve's data: calls per step come from the llm_call events
    run = RunDir.open(project / "runs/r1")
    history = History.load(run, kinds=CORE_KINDS | {"llm_call"})
    curve = learning_curve(history)
    assert curve.logged_calls and curve.steps == list(range(history.state.step + 1))
    assert curve.calls == sorted(curve.calls) and curve.calls[0] > 0
    assert curve.calls[-1] == history.state.totals.calls  # every training call, none of eval's
    assert curve.val[0] == (0, 0.0) and curve.accepted == [(1, 1.0)]


def test_the_report_draws_its_charts_without_matplotlib(
    scripted_run: RunDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The charts are SVG the report writes itself: no plotting library is imported or needed
    (matplotlib's import and drawing were most of a 1,000-step run's report time)."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # any import of it fails
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    out = tmp_path / "r.md"
    result = runner.invoke(app, ["report", "--run", str(scripted_run.path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "matplotlib" not in result.output
    assert "![learning curve](r-curve.svg)" in out.read_text()
    names = sorted(p.name for p in tmp_path.glob("r-*.svg"))
    assert names == ["r-activations.svg", "r-curve.svg", "r-q-over-time.svg"]
    assert "## Evaluated modes" not in out.read_text()  # no eval results: no table


def test_the_report_reads_the_ledger_once(
    scripted_run: RunDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history (with the calls of the learning curve) and the views come from one read:
    `llm_call` lines, the bulk of a long run's log, were parsed twice."""
    reads: list[object] = []
    real = RunDir.read_events

    def counted(self: RunDir, *args: object, **kwargs: object) -> object:
        reads.append(args)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunDir, "read_events", counted)
    result = runner.invoke(
        app, ["report", "--run", str(scripted_run.path), "-o", str(tmp_path / "r.md")]
    )
    assert result.exit_code == 0, result.output
    assert len(reads) == 1
