"""Text a hostile model writes (issue 25, items 7-9): terminal control sequences (OSC 52
clipboard writes, OSC 8 links, screen clears), HTML and remote images in edit summaries, skill
names no Windows folder can have. None reaches a terminal, a SKILL.md or report.md as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.core.skill_format import is_valid_name, slugify
from moscopt.core.skills import Pool, Skill
from moscopt.lm.base import LMRequest
from moscopt.report.render import md_text, render_markdown
from moscopt.testing import FakeLM
from moscopt.testing.scripted import ROUTES, make_run, train_run

runner = CliRunner()
LINK = re.compile(r"(?<!\\)\]\(")  # the `](` of a link or image, not backslash-escaped
ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x1b[H"
HTML = "<script>alert(1)</script> <img src=x onerror=alert(2)> ![p](http://evil.example/p.png)"


def hostile_propose(request: LMRequest) -> str:
    """The scripted proposals, each edit's content carrying escapes and markup."""
    data = json.loads(ROUTES["propose-skill"](request))
    for e in data["edits"]:
        e["content"] = f"{e['content']} {HTML} {ESCAPES}"
    data["reasoning"] = f"because {ESCAPES}{HTML}"
    return json.dumps(data)


@pytest.fixture
def hostile_run(tmp_path: Path, seed_dir: Path) -> Path:
    run, config, bench, sp, seeds = make_run(tmp_path, seed_dir)
    lm = FakeLM(routes={**ROUTES, "propose-skill": hostile_propose})
    train_run(run, config, bench, sp, seeds, lm)
    return run.path


def test_escapes_reach_no_skill_file_and_no_terminal(hostile_run: Path) -> None:
    for path in hostile_run.rglob("SKILL.md"):
        text = path.read_text()
        assert "\x1b" not in text and "\x07" not in text, path
    log = runner.invoke(app, ["log", "--run", str(hostile_run)])
    assert log.exit_code == 0, log.output
    assert "<script>" in log.stdout  # shown as text (a terminal does not render HTML) ...
    assert "\x1b" not in log.stdout and "\x07" not in log.stdout  # ... but no escape sequence
    diff = runner.invoke(app, ["diff", "careful-computation", "--run", str(hostile_run)])
    assert diff.exit_code == 0, diff.output
    assert "+" in diff.stdout and "\x1b" not in diff.stdout


def test_report_md_cells_are_literal_text(hostile_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = runner.invoke(app, ["report", "--run", str(hostile_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    # the edits in full are fenced code blocks (longer fences than any backtick run inside):
    # CommonMark shows their content as literal text, so the model's words stay as they are
    fenced = re.findall(r"^(`{3,})text\n.*?\n\1$", text, flags=re.S | re.M)
    assert fenced and "<script>" in text[text.index("## Edits in full") :]
    md = re.sub(r"^(`{3,})text\n.*?\n\1$", "", text, flags=re.S | re.M)
    assert "alert(1)" in md  # the summary is there ...
    cells = "\n".join(line for line in md.splitlines() if line.startswith("|"))
    assert "<script" not in md and "<img" not in md and not LINK.search(cells)  # ... inert
    assert "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize(
    "text",
    [
        "<script>x</script>",
        "![i](http://r/i.png)",
        "[l](javascript:alert(1))",
        "a|b",
        "**b** `c` ~~s~~",
        "&lt;",
    ],
)
def test_a_markdown_cell_renders_as_its_own_text(text: str) -> None:
    md = render_markdown([("table", ["summary"], [[text]])])
    cell = md.splitlines()[-1]
    assert "<" not in cell.replace("&lt;", "") and not LINK.search(cell)
    assert cell.count("|") - cell.count("\\|") == 2  # one cell, its pipes escaped


@given(st.text())
def test_md_text_is_one_inert_line(text: str) -> None:
    out = md_text(text)
    assert "\n" not in out and "<" not in out.replace("&lt;", "") and not LINK.search(out)


@given(st.text(alphabet=st.characters(max_codepoint=130)) | st.from_regex(r"[ -~]{0,30}"))
def test_md_texts_shortcut_for_plain_cells_changes_nothing(text: str) -> None:
    """Cells of plain words are returned as they are: exactly what the full rule gives them."""
    from moscopt.report.render import _MD_SPECIAL
    from moscopt.run.fsio import strip_controls

    flat = " ".join(strip_controls(text).split())
    full = _MD_SPECIAL.sub(r"\\\1", flat.replace("&", "&amp;").replace("<", "&lt;"))
    assert md_text(text) == full


# -- item 9: names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["abc\n", "con", "nul", "aux", "prn", "com1", "lpt9", "com0", "abc\r", "a\nb"]
)
def test_unportable_names_are_refused(name: str) -> None:
    assert not is_valid_name(name)
    with pytest.raises(ValueError):
        Skill(name=name, description="d")


def test_slugify_never_makes_a_reserved_name_and_near_names_are_fine() -> None:
    assert slugify("CON") == "con-skill" and is_valid_name(slugify("nul"))
    assert all(is_valid_name(n) for n in ("console", "com10", "aux-tool", "nul-check"))


def test_a_pool_folder_named_con_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "con"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: con\ndescription: d\n---\nbody\n")
    with pytest.raises(Exception, match="Windows"):
        Pool.load(tmp_path / "skills")


def test_skill_text_loses_terminal_controls_but_keeps_newlines_and_tabs() -> None:
    skill = Skill(name="s", description=f"d{ESCAPES}", body=f"a\tb\r\nc{ESCAPES}\x08")
    assert skill.body == "a\tb\nclink\n" and skill.description == "dlink"
