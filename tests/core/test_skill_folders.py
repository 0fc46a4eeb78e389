"""Whole skill folders (scripts/, references/, assets/) and front matter the user's tools wrote:
kept verbatim through load, dump, JSON (checkpoints) and the digest; front matter that loads
always dumps to text that loads to the same values (issue 38, item 3)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.core.skill_files import FOLDER_MAX_BYTES, SkillFile
from moscopt.core.skills import Pool, Skill
from moscopt.errors import UserError

SKILL = """---
name: brief-writer
description: Write a brief.
version: 1.2.0
triggers:
- write a brief
- summarize
---

# Brief writer
Run scripts/extract.py first.
"""
ASSET = bytes(range(256)) * 4  # binary, with NUL bytes


def _folder(root: Path) -> Path:
    skill = root / "brief-writer"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "assets").mkdir()
    (skill / "SKILL.md").write_text(SKILL)
    script = skill / "scripts" / "extract.py"
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    script.chmod(0o755)
    (skill / "references" / "style.md").write_text("# House style\nRisks first.\n")
    (skill / "assets" / "logo.png").write_bytes(ASSET)
    return skill


def _tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            out[p.relative_to(folder).as_posix()] = (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
    return out


def test_a_skill_folder_survives_load_dump_and_json(tmp_path: Path) -> None:
    src = _folder(tmp_path / "in")
    pool = Pool.load(src.parent)
    skill = pool.get("brief-writer")
    assert [f.path for f in skill.files] == [
        "assets/logo.png",
        "references/style.md",
        "scripts/extract.py",
    ]
    assert skill.extras == {"version": "1.2.0", "triggers": ["write a brief", "summarize"]}
    again = Pool.from_json(pool.to_json())  # checkpoints and history go through JSON
    assert again == pool and again.digest() == pool.digest()
    again.dump(tmp_path / "out")
    assert _tree(tmp_path / "out" / "brief-writer") == _tree(src)
    assert (tmp_path / "out" / "brief-writer" / "SKILL.md").read_text() == SKILL


def test_a_changed_script_is_a_changed_pool(tmp_path: Path) -> None:
    src = _folder(tmp_path)
    before = Pool.load(tmp_path).digest()
    (src / "scripts" / "extract.py").write_text("print('changed')\n")
    assert Pool.load(tmp_path).digest() != before
    (src / "scripts" / "extract.py").chmod(0o644)
    assert Pool.load(tmp_path).digest() != before


def test_edits_keep_the_files_and_prune_removes_stale_ones(tmp_path: Path) -> None:
    src = _folder(tmp_path / "in")
    skill = Pool.load(src.parent).get("brief-writer")
    edited = skill.with_body("# Brief writer\nRisks first.\n")
    assert edited.files == skill.files and edited.extras == skill.extras
    out = tmp_path / "out"
    edited.dump(out)
    (out / "scripts" / "old.py").write_text("stale")
    edited.model_copy(update={"files": skill.files[:1]}).dump(out, prune=True)
    assert sorted(_tree(out)) == ["SKILL.md", "assets/logo.png"]
    assert not (out / "scripts").exists()


def test_unknown_front_matter_keys_are_kept_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _folder(tmp_path)
    with caplog.at_level(logging.WARNING):
        Pool.load(tmp_path)
    assert "'version' is not part of the Agent Skills format" in caplog.text


def test_links_and_oversized_folders_are_refused_by_name(tmp_path: Path) -> None:
    src = _folder(tmp_path / "a")
    os.symlink("/etc/passwd", src / "references" / "passwd")
    with pytest.raises(UserError, match="symbolic links") as e:
        Pool.load(src.parent)
    assert "passwd" in str(e.value)
    src = _folder(tmp_path / "b")
    (src / "assets" / "big.bin").write_bytes(b"\0" * (FOLDER_MAX_BYTES + 1))
    with pytest.raises(UserError, match=r"MiB besides SKILL\.md") as e:
        Pool.load(src.parent)
    assert "brief-writer" in str(e.value)


@pytest.mark.parametrize("bad", ["../x", "/etc/x", "a/../../x", "SKILL.md", "a\\b", ""])
def test_file_paths_stay_inside_the_folder(bad: str) -> None:
    with pytest.raises(ValueError):
        SkillFile(path=bad, data=b"")


def test_a_dashes_line_inside_a_value_round_trips(tmp_path: Path) -> None:
    skill = Skill(
        name="a",
        description="one\n---\ntwo",
        license="MIT\n---",
        metadata={"note": "a\n---\nb"},
        extras={"x": {"deep": ["---", "a\n --- \nb"]}},
    )
    text = skill.dumps()
    assert Skill.loads(text) == skill
    assert Skill.loads(Skill.loads(text).dumps()).dumps() == text


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["---", "a\n---\nb", "\n---\n", " --- ", "x\r\n---", "\x85---", "…\n---"]
)
_value = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    description=_text.filter(lambda t: t.strip() != ""),
    metadata=st.dictionaries(_text, _value, max_size=3),
    extras=st.dictionaries(
        st.sampled_from(["version", "triggers", "x-note", "owner"]), _value, max_size=3
    ),
)
def test_what_loads_dumps_to_what_loads_the_same(
    description: str, metadata: dict[str, object], extras: dict[str, object]
) -> None:
    try:
        skill = Skill(name="s", description=description, metadata=metadata, extras=extras)
    except ValueError:
        return  # a description the format refuses (too long, control characters only)
    loaded = Skill.loads(skill.dumps())
    assert loaded.front_matter() == skill.front_matter()
    assert loaded.dumps() == skill.dumps()


@pytest.mark.parametrize("name", ["café-helper", "résumé", "数据-分析", "a1-b2"])
def test_names_the_reference_validator_accepts(name: str) -> None:
    assert Skill(name=name, description="d").name == name


@pytest.mark.parametrize("name", ["Café", "a--b", "-a", "a-", "a_b", "con", "cafe\u0301", ""])
def test_names_it_refuses(name: str) -> None:
    with pytest.raises(ValueError):
        Skill(name=name, description="d")


def test_a_unicode_name_round_trips_through_its_folder(tmp_path: Path) -> None:
    skill = Skill(name="café-helper", description="d", body="x")
    Pool(skills=(skill,)).dump(tmp_path)
    assert Pool.load(tmp_path).get("café-helper") == skill
