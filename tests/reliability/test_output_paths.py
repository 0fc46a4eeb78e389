"""Where `report -o` and `export -o` write (issue 25, items 11-12): a dangling symbolic link is
refused, and so is any link an export would replace (exit 2, the link untouched, no
`.link.old-PID` left); a report goes into a linked folder as into any folder; every file a report
writes beside its page is checked before anything is written, and a failed report leaves no
stray image."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.testing import FakeServer
from moscopt.testing.scripted import server_responder

from .helpers import snapshot, train_args

runner = CliRunner()


@pytest.fixture
def trained(project: Path) -> Iterator[tuple[Path, str]]:
    with FakeServer(responder=server_responder) as server:
        made = runner.invoke(app, train_args(server.url, epochs=1))
        assert made.exit_code == 0, made.output
        yield project / "runs/r1", server.url


@pytest.mark.parametrize("target", ["dangling", "live"])
@pytest.mark.parametrize("force", [False, True])
def test_report_and_export_refuse_a_symlinked_output(
    trained: tuple[Path, str], tmp_path: Path, target: str, force: bool
) -> None:
    run, _ = trained
    real = tmp_path / "elsewhere"
    if target == "live":
        real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    before = sorted(p.name for p in tmp_path.iterdir())
    extra = ["--force"] if force else []
    commands = [["export", "--mode", "static", "--run", str(run), "-o", str(link), *extra]]
    if target == "dangling":
        commands += [
            ["report", "--run", str(run), "-o", str(link), *extra],
            ["report", "--run", str(run), "-o", str(link / "r.md"), *extra],
        ]
    for args in commands:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "symbolic link" in result.output or "not a folder" in result.output
        assert "Traceback" not in result.output
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # no .link.old-PID
        if target == "live":
            assert not any(real.iterdir())
    if target == "live":  # a report goes into the linked folder, the link stays
        result = runner.invoke(app, ["report", "--run", str(run), "-o", str(link), *extra])
        assert result.exit_code == 0, result.output
        assert link.is_symlink() and (real / "report.md").is_file()


def test_report_o_onto_a_link_to_a_file_is_refused(
    trained: tuple[Path, str], tmp_path: Path
) -> None:
    run, _ = trained
    (tmp_path / "mine.md").write_text("mine")
    (tmp_path / "r.md").symlink_to(tmp_path / "mine.md")
    for extra in ([], ["--force"]):
        result = runner.invoke(
            app, ["report", "--run", str(run), "-o", str(tmp_path / "r.md"), *extra]
        )
        assert result.exit_code == 2 and "symbolic link" in result.output, result.output
    assert (tmp_path / "r.md").is_symlink() and (tmp_path / "mine.md").read_text() == "mine"


def test_report_refuses_to_overwrite_any_side_image_without_force(
    trained: tuple[Path, str], tmp_path: Path
) -> None:
    run, _ = trained
    out = tmp_path / "out"
    first = runner.invoke(app, ["report", "--run", str(run), "-o", str(out)])
    assert first.exit_code == 0, first.output
    images = sorted(p.name for p in out.glob("*.svg"))
    side = [n for n in images if not n.endswith("-curve.svg")]
    assert side, images  # the views' images (activations, Q over time) are there
    for keep in side:
        for p in out.iterdir():  # only this one image is left of the earlier report
            if p.name != keep:
                p.unlink()
        (out / keep).write_bytes(b"mine")
        again = runner.invoke(app, ["report", "--run", str(run), "-o", str(out)])
        assert again.exit_code == 2, again.output
        assert keep in again.output and "--force" in again.output
        assert sorted(p.name for p in out.iterdir()) == [keep]
        assert (out / keep).read_bytes() == b"mine"
    forced = runner.invoke(app, ["report", "--run", str(run), "-o", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in out.glob("*.svg")) == images


def test_a_failed_report_leaves_no_stray_image(
    trained: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import moscopt.run.fsio as fsio

    run, _ = trained
    real = fsio.atomic_write_bytes

    def failing(path: Any, data: bytes) -> None:
        if str(path).endswith(".md"):
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(fsio, "atomic_write_bytes", failing)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    result = runner.invoke(app, ["report", "--run", str(run), "-o", str(out)])
    assert result.exit_code != 0
    assert snapshot(out) == before  # no image of the failed report is left


def test_two_reports_of_one_run_in_one_folder_have_their_own_images(
    trained: tuple[Path, str], tmp_path: Path
) -> None:
    """Issue 38: side images are named after the page (`A-q-over-time.svg`), not the run, so
    `report -o A.md` then `report -o B.md` in one folder is not refused."""
    run, _ = trained
    out = tmp_path / "out"
    for name in ("A", "B"):
        result = runner.invoke(app, ["report", "--run", str(run), "-o", str(out / f"{name}.md")])
        assert result.exit_code == 0, result.output
    images = sorted(p.name for p in out.glob("*.svg"))
    assert len(images) >= 4 and all(n.startswith(("A-", "B-")) for n in images), images
    for name in ("A", "B"):
        page = (out / f"{name}.md").read_text()
        linked = [n for n in images if f"]({n})" in page]
        assert linked and all(n.startswith(f"{name}-") for n in linked), (name, linked)
