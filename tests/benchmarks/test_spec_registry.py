from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.benchmarks import get_benchmark, list_benchmarks
from moscopt.benchmarks.spec import load_spec
from moscopt.errors import UserError

BUILT_IN = [
    "aime",
    "bbh",
    "gpqa-diamond",
    "gsm8k",
    "hle",
    "humaneval",
    "ifeval",
    "livemath",
    "math500",
    "mbpp",
    "offline",
    "searchqa",
]


def test_built_in_specs_are_valid_and_sorted() -> None:
    names = [b.name for b in list_benchmarks()]
    assert names == BUILT_IN
    for b in list_benchmarks():
        assert b.description
        assert b.spec.splits.seed == 42
        if b.spec.source.hub:
            assert all(h.revision for h in b.spec.source.hub)


def test_aime_split_and_code_tools() -> None:
    aime = get_benchmark("aime")
    assert aime.spec.splits.sizes() == {"train": 50, "val": 10, "test": 30}
    assert get_benchmark("humaneval").tools == ["python"]
    assert "FINAL ANSWER" in get_benchmark("offline").answer_instructions


def test_unknown_benchmark_lists_the_known_ones() -> None:
    with pytest.raises(UserError) as info:
        get_benchmark("nope")
    assert info.value.exit_code == 2
    assert "unknown benchmark 'nope'" in str(info.value)
    assert "aime" in str(info.value) and "offline" in str(info.value)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


GOOD = """\
name: demo
description: demo
source:
  local:
    files: [demo.jsonl]
    fields: {id: id, question: q, answer: a}
grader: exact
"""


def test_spec_file_loads_by_path(tmp_path: Path) -> None:
    bench = get_benchmark(str(_write(tmp_path, GOOD)))
    assert bench.name == "demo"
    assert bench.spec.splits.sizes() == {"train": 100, "val": 20, "test": 50}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (("grader: exact", "grader: exact\nbogus: 1"), "bogus", "unknown key"),
        (("grader: exact", "grader: fuzzy"), "grader", "Input should be"),
        (("grader: exact", "grader: custom"), "(root)", "grader_entry"),
        (("answer: a}", "}"), "(root)", "needs fields.answer"),
        (("grader: exact", "grader: exact\nprompt_template: '{nope}'"), "(root)", "{nope}"),
        (("name: demo", "name: Demo Bench"), "(root)", "lowercase"),
    ],
)
def test_bad_specs_name_the_field(
    tmp_path: Path, change: tuple[str, str], field: str, message: str
) -> None:
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(UserError) as info:
        load_spec(path)
    text = str(info.value)
    assert str(path) in text
    assert message in text
    if field != "(root)":
        assert f"field '{field}'" in text


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: [unclosed\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_spec(path)


def test_yaml_anchors_and_aliases_are_one_clear_error(tmp_path: Path) -> None:
    """An alias bomb (nested aliases that would expand to billions of nodes) is refused at the
    first anchor, before anything is built."""
    bomb = ["name: demo", "a: &a [x, x, x, x, x, x, x, x, x]"]
    bomb += [
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    path = _write(tmp_path, "\n".join(bomb) + "\n")
    with pytest.raises(UserError) as info:
        load_spec(path)
    assert info.value.exit_code == 2
    assert str(info.value).startswith(f"{path}:2: ")
    assert "anchors and aliases" in str(info.value)


def test_alias_in_a_spec_is_exit_2_from_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from moscopt.cli import app

    path = _write(tmp_path, GOOD.replace("grader: exact", "grader: &g exact\nextra: *g"))
    result = CliRunner().invoke(app, ["eval", "--benchmark", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output and "anchors and aliases" in result.output
