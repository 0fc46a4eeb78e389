from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moscopt.core.skill_format import is_valid_name, slugify
from moscopt.core.skills import GATE_NAME, Pool, Skill
from moscopt.errors import UserError


def test_seed_library_round_trips_byte_identical(seed_dir: Path, tmp_path: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    assert len(pool) == 10 and pool.gate is not None
    pool.dump(tmp_path)
    for original in sorted(seed_dir.glob("*/SKILL.md")):
        copy = tmp_path / original.parent.name / "SKILL.md"
        assert copy.read_bytes() == original.read_bytes(), original


def test_seed_library_is_substantial(seed_dir: Path) -> None:
    pool = Pool.load(seed_dir, require_gate=True)
    for skill in pool:
        assert skill.body.count("\n") >= 15, f"{skill.name} is too thin to start from"
        assert 50 <= len(skill.description) <= 1024
    assert pool.gate is not None and "ACTIVATE:" in pool.gate.body


def test_dump_is_deterministic_and_skips_unchanged_files(seed_dir: Path, tmp_path: Path) -> None:
    pool = Pool.load(seed_dir)
    pool.dump(tmp_path)
    stamp = {p: p.stat().st_mtime_ns for p in tmp_path.glob("*/SKILL.md")}
    Pool.load(tmp_path).dump(tmp_path)
    assert stamp == {p: p.stat().st_mtime_ns for p in tmp_path.glob("*/SKILL.md")}


def test_canonical_form() -> None:
    s = Skill(
        name="x-y",
        description="  says: things  ",
        body="\r\n\r\n# T\r\nline  \r\n\r\n\r\n",
        metadata={"b": 1, "a": {"z": 2, "c": 3}},
    )
    assert s.dumps() == (
        "---\nname: x-y\ndescription: 'says: things'\nmetadata:\n  a:\n    c: 3\n    z: 2\n"
        "  b: 1\n---\n\n# T\nline\n"
    )


def test_optional_agent_skills_fields_round_trip() -> None:
    text = (
        "---\nname: pdf\ndescription: Work with PDFs.\nlicense: MIT\ncompatibility: needs python\n"
        "allowed-tools: Bash(python:*) Read\nmetadata:\n  author: me\n---\n\nBody.\n"
    )
    assert Skill.loads(text).dumps() == text


names = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)


@settings(max_examples=200, deadline=None)
@given(name=names, description=texts, body=texts, meta=st.dictionaries(names, texts, max_size=3))
def test_dump_load_is_a_fixed_point(name: str, description: str, body: str, meta: dict) -> None:
    try:
        skill = Skill(name=name, description=description, body=body, metadata=meta)
    except ValueError:
        return  # empty or over-long description: rejected, fine
    text = skill.dumps()
    again = Skill.loads(text)
    assert again.dumps() == text
    assert again.body == skill.body and again.metadata == skill.metadata


def _write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("# no front matter\n", ":1: missing YAML front matter"),
        ("---\nname: a\ndescription: d\n", ":1: front matter is not closed"),
        ("---\nname: a\ndescription: [unclosed\n---\nbody\n", ":3: front matter is not valid YAML"),
        ("---\n- a\n- b\n---\n", "front matter must be a YAML mapping"),
        ("---\nname: a\n---\n", "field 'description': required but missing"),
        ("---\nname: a\ndescription: ''\n---\n", "field 'description': must not be empty"),
        ("---\nname: a\ndescription: " + "x" * 1025 + "\n---\n", "at most 1024"),
        ("---\nname: a\ndescription: d\nmetadata: 3\n---\n", "field 'metadata'"),
    ],
)
def test_broken_skill_files_name_file_and_place(tmp_path: Path, text: str, expect: str) -> None:
    path = _write(tmp_path, "a", text)
    with pytest.raises(UserError) as e:
        Pool.load(tmp_path)
    assert str(path) in str(e.value)
    assert expect in str(e.value)


def test_name_must_match_folder(tmp_path: Path) -> None:
    path = _write(tmp_path, "folder", "---\nname: other\ndescription: d\n---\n")
    with pytest.raises(UserError, match="does not match its folder") as e:
        Pool.load(tmp_path)
    assert str(path) in str(e.value) and "field 'name'" in str(e.value)


def test_bad_name_and_non_utf8(tmp_path: Path) -> None:
    _write(tmp_path, "Bad_Name", "---\nname: Bad_Name\ndescription: d\n---\n")
    with pytest.raises(UserError, match="lowercase-hyphen name"):
        Pool.load(tmp_path)
    shutil.rmtree(tmp_path / "Bad_Name")
    path = _write(tmp_path, "a", b"---\nname: a\ndescription: caf\xe9\n---\n")
    with pytest.raises(UserError, match="not valid UTF-8") as e:
        Pool.load(tmp_path)
    assert f"{path}:3" in str(e.value)


def test_missing_or_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="skills directory not found"):
        Pool.load(tmp_path / "nope")
    with pytest.raises(UserError, match="no skills found"):
        Pool.load(tmp_path)
    _write(tmp_path, "a", "---\nname: a\ndescription: d\n---\n")
    with pytest.raises(UserError, match="gating skill"):
        Pool.load(tmp_path, require_gate=True)


def test_pool_rules_and_operations() -> None:
    a = Skill(name="a", description="d")
    b = Skill(name="b", description="d")
    with pytest.raises(ValueError, match="duplicate"):
        Pool(skills=(a, a))
    with pytest.raises(ValueError, match="reserved"):
        Pool(skills=(Skill(name=GATE_NAME, description="d"),))
    pool = Pool(skills=(b, a))
    assert pool.names == ["a", "b"]  # ordered by name, whatever the input order
    edited = pool.replace(a.with_body("new"))
    assert edited.get("a").body == "new\n" and pool.get("a").body == ""
    assert edited.digest() != pool.digest()
    assert Pool.from_json(edited.to_json()) == edited
    assert pool.fresh_name("a", taken=["a-2"]) == "a-3"
    assert pool.fresh_name("Math Expert!") == "math-expert"


_names = st.sampled_from(["a", "b", "café-helper", "数据-分析", "z9", "ab", "a-b"])
_bodies = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    skills=st.dictionaries(_names, _bodies, min_size=1, max_size=5),
    gate=st.none() | _bodies,
    edits=st.lists(st.tuples(_names, _bodies), max_size=4),
)
def test_the_digest_is_the_hash_of_the_canonical_json(
    skills: dict[str, str], gate: str | None, edits: list[tuple[str, str]]
) -> None:
    """The digest is built from each skill's remembered canonical JSON: after any sequence of
    edits it is still exactly sha256(canonical_json(to_json())), the digest runs stored."""
    import hashlib

    from moscopt.run.fsio import canonical_json

    def made(name: str, body: str) -> Skill:
        return Skill(name=name, description=f"d {name}", body=body, metadata={"k": [body]})

    pool = Pool(
        skills=tuple(made(n, b) for n, b in skills.items()),
        gate=Skill(name=GATE_NAME, description="g", body=gate) if gate is not None else None,
    )
    for name, body in [("", ""), *edits]:
        if name in pool:
            pool = pool.replace(pool.get(name).with_body(body))
        elif name:
            pool = pool.add(made(name, body))
        expected = hashlib.sha256(canonical_json(pool.to_json()).encode("utf-8")).hexdigest()
        assert pool.digest() == expected
        assert Pool.from_json(pool.to_json()).digest() == expected


def test_prune_removes_only_stale_skill_folders(tmp_path: Path) -> None:
    pool = Pool(skills=(Skill(name="a", description="d"), Skill(name="b", description="d")))
    pool.dump(tmp_path)
    (tmp_path / "notes").mkdir()
    pool.remove("b").dump(tmp_path, prune=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "notes"]


def test_names() -> None:
    assert is_valid_name("a-1") and not is_valid_name("-a") and not is_valid_name("a--b")
    assert not is_valid_name("x" * 65)
    assert slugify("  Hello, World  ") == "hello-world" and slugify("!!!") == "skill"
