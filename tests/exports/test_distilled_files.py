"""The distilled skill ships the merged skills' folder files, at the paths its prompt named."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moscopt.core.skill_files import SkillFile
from moscopt.core.skills import Skill
from moscopt.errors import UserError
from moscopt.exports.distill import distill, merged_files
from moscopt.lm.base import LMRequest
from moscopt.testing.fake_lm import FakeLM

BODY = "# Steps\n\n1. Run scripts/check.py on the answer.\n2. Read references/api.md.\n3. Answer.\n"


def skill(name: str, *files: tuple[str, bytes]) -> Skill:
    return Skill(
        name=name,
        description=f"{name} rules",
        body=BODY,
        files=tuple(
            SkillFile(path=p, data=d, mode=0o755 if p.endswith(".py") else 0o644) for p, d in files
        ),
    )


def test_each_path_is_the_best_skills_and_a_clash_moves_under_the_later_name() -> None:
    best = skill("alpha", ("scripts/check.py", b"A"), ("references/api.md", b"same"))
    other = skill("beta", ("scripts/check.py", b"B"), ("references/api.md", b"same"))
    placed = merged_files([best, other])
    assert [f.path for f in placed["alpha"]] == ["references/api.md", "scripts/check.py"]
    assert [f.path for f in placed["beta"]] == ["references/api.md", "beta/scripts/check.py"]
    assert {f.path: f.data for f in placed["beta"]}["beta/scripts/check.py"] == b"B"


def test_the_distilled_skill_carries_the_files_its_prompt_listed(tmp_path: Path) -> None:
    best = skill("alpha", ("scripts/check.py", b"print('a')\n"), ("references/api.md", b"doc"))
    other = skill("beta", ("scripts/check.py", b"print('b')\n"), ("references/api.md", b"doc"))
    prompts: list[str] = []

    def answer(request: LMRequest) -> str:
        prompts.append(request.messages[-1]["content"])
        return json.dumps({"name": "merged", "description": "d", "body": BODY})

    lm = FakeLM(routes={"distill": answer})
    merged, attempts = asyncio.run(distill(lm, [best, other], None, 2, {"alpha": 0.9}))
    assert attempts == 1
    shipped = {f.path: (f.data, f.mode) for f in merged.files}
    assert shipped == {
        "references/api.md": (b"doc", 0o644),
        "scripts/check.py": (b"print('a')\n", 0o755),
        "beta/scripts/check.py": (b"print('b')\n", 0o755),
    }
    assert "shipped with the distilled skill: references/api.md, scripts/check.py" in prompts[0]
    assert "references/api.md, beta/scripts/check.py" in prompts[0]
    # written as a folder and read back: the same skill, its files and their modes included
    assert Skill.load(merged.dump(tmp_path / "merged")) == merged


def test_more_files_than_a_folder_holds_is_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moscopt.exports import distill as module

    monkeypatch.setattr(module, "FOLDER_MAX_FILES", 2)
    big = [skill("alpha", ("a.md", b"1"), ("b.md", b"2")), skill("beta", ("c.md", b"3"))]
    lm = FakeLM()
    with pytest.raises(UserError, match=r"ship 3 files.*distil fewer \(--top\)"):
        asyncio.run(distill(lm, big, None, 2, {}))
    assert lm.history == []
