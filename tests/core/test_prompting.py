from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.core.prompting import PROMPTS, Prompt, PromptError, load_prompt, render


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_every_prompt_file_uses_exactly_its_placeholders(name: str) -> None:
    prompt = load_prompt(name)
    text = prompt.render(**{p: f"<{p}>" for p in PROMPTS[name]})
    for p in PROMPTS[name]:
        assert f"<{p}>" in text
    assert "{{" not in text


def test_prompt_files_are_all_declared() -> None:
    folder = Path(__file__).resolve().parents[2] / "moscopt" / "prompts"
    assert {p.stem for p in folder.glob("*.md")} == set(PROMPTS)


def test_render_checks_values_and_keeps_json_and_latex() -> None:
    p = Prompt("t", 'Give {"a": 1} and $x^{2}$ for {{ task }}', frozenset({"task"}))
    assert p.render(task="T") == 'Give {"a": 1} and $x^{2}$ for T\n'
    with pytest.raises(PromptError, match="missing"):
        p.render()
    with pytest.raises(PromptError, match="unexpected"):
        p.render(task="T", other=1)
    with pytest.raises(PromptError, match="unexpected"):
        Prompt("t", "{{a}} {{b}}", frozenset({"a"}))
    assert "ACTIVATE" in render("gate_user", task="t", k=2, table="|")
