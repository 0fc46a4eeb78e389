"""Exports are checked by the Agent Skills reference validator when it is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.errors import UserError
from moscopt.exports.reference import check_with_reference
from moscopt.exports.target import write_tree


def skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: Does one thing.\n---\nBody.\n"


def test_a_skill_the_reference_refuses_stops_the_export_and_keeps_the_old_one(
    tmp_path: Path,
) -> None:
    pytest.importorskip("skills_ref")
    out = tmp_path / "export"
    old = {"moscopt-export.json": "{}", "skills/good/SKILL.md": skill("good")}
    write_tree(out, old, force=False, check=check_with_reference)
    bad = {"moscopt-export.json": "{}", "skills/Bad--name/SKILL.md": skill("Bad--name")}
    with pytest.raises(UserError, match="skills-ref") as caught:
        write_tree(out, bad, force=True, check=lambda t: check_with_reference(t, shown=out))
    assert caught.value.path == out / "skills" / "Bad--name" / "SKILL.md"
    assert "lowercase" in str(caught.value) and "consecutive hyphens" in str(caught.value)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "moscopt-export.json",
        "skills/good/SKILL.md",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["export"]  # no staging folder left


def test_without_the_reference_nothing_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "skills_ref" else real(n, *a)
    )
    (tmp_path / "skills" / "Bad--name").mkdir(parents=True)
    (tmp_path / "skills" / "Bad--name" / "SKILL.md").write_text(skill("Bad--name"))
    check_with_reference(tmp_path)
