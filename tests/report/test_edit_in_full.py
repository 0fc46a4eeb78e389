"""Every edit can be read in full (`log --full`, `log --edit N`, the report's "Edits in full"):
its operations as proposed, the unified diff against the skill it targeted (a rejected edit's
too), its whole reasoning and the decision with each sample's per-task rewards."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.core.edits import MAX_CONTENT_CHARS
from moscopt.report.page import write_report
from moscopt.run.edit_detail import DIFF_MAX_CHARS, bounded, full_lines, op_record, proposal_diff
from moscopt.run.ledger import EditEvent
from moscopt.run.rundir import RunDir
from moscopt.testing.scripted import MAGIC, VAGUE

runner = CliRunner()


def _events(run: RunDir) -> list[EditEvent]:
    return [e for e in run.read_events(run.load_state(), {"edit"}) if isinstance(e, EditEvent)]


def test_the_ledger_keeps_a_rejected_edit_in_full(scripted_run: RunDir) -> None:
    rejected = next(e for e in _events(scripted_run) if e.status == "rejected")
    assert rejected.outcomes == [
        {"op": "add", "status": "applied", "reason": "", "anchor": "", "content": VAGUE}
    ]
    assert f"+{VAGUE}" in rejected.diff.splitlines()
    assert rejected.diff.startswith("--- a/careful-computation/SKILL.md (step 0)\n")
    assert rejected.incumbent and rejected.candidate and rejected.incumbent != rejected.candidate
    assert rejected.decision is not None
    assert len(rejected.samples["candidate"]) == rejected.decision.samples
    assert rejected.samples["incumbent"] == [[0.0] * 6]  # six validation tasks
    not_applied = next(e for e in _events(scripted_run) if e.status == "not_applied")
    assert not_applied.outcomes[0]["anchor"] == "this anchor does not exist"
    assert not_applied.reasoning == "r" and not not_applied.diff


def test_log_full_prints_each_edit_with_diff_reasoning_and_samples(scripted_run: RunDir) -> None:
    result = runner.invoke(app, ["log", "--run", str(scripted_run.path), "--full"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "careful-computation  rejected  0.000 -> 0.000  (edit 1)" in out
    assert f"    +{VAGUE}" in out  # the rejected edit's diff, which `diff SKILL` cannot show
    assert f"    +{MAGIC}" in out
    assert "anchor: (empty) = the end of the body" in out
    assert "| this anchor does not exist" in out  # an operation that matched nothing
    assert "sample 0: 0.000 (0 0 0 0 0 0) | 1.000 (1 1 1 1 1 1)" in out


def test_log_edit_n_shows_one_edit_and_json_carries_it_whole(scripted_run: RunDir) -> None:
    path = str(scripted_run.path)
    one = runner.invoke(app, ["log", "--run", path, "--edit", "1"])
    assert one.exit_code == 0, one.output
    assert "(edit 1)" in one.stdout and "(edit 2)" not in one.stdout and f"+{VAGUE}" in one.stdout
    rows = json.loads(runner.invoke(app, ["log", "--run", path, "--edit", "1", "--json"]).stdout)
    assert [r["edit"] for r in rows] == [1]
    assert rows[0]["operations"][0]["content"] == VAGUE and f"+{VAGUE}" in rows[0]["diff"]
    assert rows[0]["samples"]["incumbent"] == [[0.0] * 6]  # six validation tasks
    brief = json.loads(runner.invoke(app, ["log", "--run", path, "--json"]).stdout)
    assert "diff" not in brief[0] and brief[0]["edit"] == 1  # the short form stays short
    # numbers are the run's, with or without --skill
    gate = json.loads(
        runner.invoke(app, ["log", "--run", path, "--skill", "gate", "--json"]).stdout
    )
    assert [r["edit"] for r in gate] == [5]
    missing = runner.invoke(app, ["log", "--run", path, "--edit", "99"])
    assert missing.exit_code == 2 and "no edit 99 in this run (it has 5 edit(s))" in missing.output


def test_the_report_links_each_edit_to_its_full_text(scripted_run: RunDir, tmp_path: Path) -> None:
    md = write_report(scripted_run, tmp_path / "r.md").path.read_text()
    assert "Each edit in full: [Edit 1](#edit-1), [Edit 2](#edit-2)" in md
    section = md[md.index("## Edits in full") :]
    assert "### Edit 1\n\n```text\nstep 0, skills careful-computation: rejected\n" in section
    assert f"+{VAGUE}" in section
    page = write_report(scripted_run, tmp_path / "h" / "r.html", html_out=True).path.read_text()
    assert '<a href="#edit-1">Edit 1</a>' in page and '<h3 id="edit-1">Edit 1</h3>' in page
    assert "<pre>step 0, skills careful-computation: rejected\n" in page


def test_a_code_fence_in_an_edit_cannot_close_the_reports_block() -> None:
    from moscopt.report.render import render_markdown

    text = render_markdown([("pre", "+```\n+# heading <script>")])
    assert text == "````text\n+```\n+# heading <script>\n````\n"


def test_recorded_text_is_bounded() -> None:
    long = "x" * (MAX_CONTENT_CHARS + 50)
    record = op_record("add", "", long, "error", "content too long")
    assert record["content"].endswith("[... 50 more characters not recorded]")
    assert len(record["content"]) < MAX_CONTENT_CHARS + 60
    diff = proposal_diff([("s", "a\n", "b\n" * DIFF_MAX_CHARS)], 0)
    assert len(diff) < DIFF_MAX_CHARS + 60 and diff.endswith("more characters not recorded]")
    assert bounded("short", 10) == "short"


def test_an_edit_logged_by_an_older_version_says_what_was_not_recorded() -> None:
    row = {"status": "rejected", "reasoning": "", "decision": None, "summary": "s"}
    lines = full_lines(row)
    assert lines == [
        "operations: not recorded (the run was logged by an older moscopt)",
        "diff: not recorded (the run was logged by an older moscopt) "
        "(`moscopt diff SKILL` shows accepted edits)",
    ]
