"""`status` shows every skill's description whole (wrapped in its column, never cut at ~40
characters) and breaks a list between its items, never inside one."""

from __future__ import annotations

from rich.console import Console
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.cli.status import listing
from moscopt.run.rundir import RunDir

runner = CliRunner()


def test_descriptions_are_whole_at_any_width(scripted_run: RunDir) -> None:
    pool = scripted_run.load_pool(scripted_run.load_state())
    for width in (60, 100):
        shown = runner.invoke(
            app, ["status", "--run", str(scripted_run.path)], env={"COLUMNS": str(width)}
        )
        assert shown.exit_code == 0, shown.output
        assert "…" not in shown.stdout
        rows = [line for line in shown.stdout.splitlines() if "│" in line]
        assert rows and max(len(line) for line in rows) <= width
        column = " ".join(" ".join(line.rsplit("│", 1)[1].split()) for line in rows)
        for skill in pool:
            assert " ".join(skill.description.split()) in column, skill.name


def test_a_list_breaks_between_its_items() -> None:
    console = Console(width=40, record=True)
    items = [f"skill-number-{i}+other-{i}: {i}" for i in range(5)]
    listing(console, "synergy: ", items)
    lines = console.export_text().splitlines()
    assert lines[0] == "synergy: skill-number-0+other-0: 0,"
    assert lines[1:] == [f"  skill-number-{i}+other-{i}: {i}," for i in range(1, 4)] + [
        "  skill-number-4+other-4: 4"
    ]
    console = Console(width=40, record=True)
    listing(console, "best val per epoch: ", [f"{i}: 0.500" for i in range(5)], "  ")
    assert console.export_text().splitlines() == [
        "best val per epoch: 0: 0.500  1: 0.500",
        "  2: 0.500  3: 0.500  4: 0.500",
    ]


def test_a_large_pool_shows_its_best_skills_and_says_so() -> None:
    """Past `SHOWN_SKILLS` rows the table holds the skills with the highest Q (never-scored ones
    last, ties by activations), in the pool's order, and a line says how many are left out."""
    from moscopt.cli.status import SHOWN_SKILLS, shown_skills

    skills = [
        {"name": f"s{i:03d}", "q": None if i % 7 == 0 else (i % 10) / 10, "activations": i}
        for i in range(SHOWN_SKILLS + 25)
    ]
    shown = shown_skills(skills)
    assert len(shown) == SHOWN_SKILLS
    assert [s["name"] for s in shown] == sorted(s["name"] for s in shown)  # the pool's order
    kept = {s["name"] for s in shown}
    cut = [s for s in skills if s["name"] not in kept]
    lowest_kept = min((s["q"], s["activations"]) for s in shown if s["q"] is not None)
    assert all(s["q"] is None or (s["q"], s["activations"]) <= lowest_kept for s in cut)
    assert shown_skills(skills[:SHOWN_SKILLS]) == skills[:SHOWN_SKILLS]  # small pools: all
