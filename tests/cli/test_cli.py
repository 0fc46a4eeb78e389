from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.config import Config
from moscopt.core.skills import Pool
from moscopt.run.rundir import RunDir
from moscopt.run.state import RunState

runner = CliRunner()


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_init_scaffolds_a_project(tmp_path: Path, seed_dir: Path) -> None:
    result = runner.invoke(app, ["init", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    demo = tmp_path / "demo"
    assert (demo / "moscopt.yaml").is_file()
    assert "runs/*/cache/" in (demo / ".gitignore").read_text()
    assert Pool.load(demo / "skills", require_gate=True) == Pool.load(seed_dir, require_gate=True)


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    runner.invoke(app, ["init", str(tmp_path)])
    (tmp_path / "moscopt.yaml").write_text("seed: 5\n")
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert "moscopt.yaml: already exists" in result.output
    assert "Traceback" not in result.output
    assert snapshot(tmp_path) == before


def test_init_keeps_an_existing_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc")
    runner.invoke(app, ["init", str(tmp_path)])
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\nruns/*/cache/\nruns/*/.lock\n"


def test_status_of_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner.invoke(app, ["init", str(tmp_path)])
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    assert "careful-computation" in result.output and "N=10 K=3" in result.output
    result = runner.invoke(app, ["status", "--json"])
    assert '"k": 3' in result.output


def test_status_of_a_run(tmp_path: Path, seed_dir: Path) -> None:
    state = RunState(benchmark="offline", step=4, q={"careful-computation": 0.75})
    state.activations["careful-computation"] = 6
    state.synergy["careful-computation|detail-verifier"] = 4
    run = RunDir.create(tmp_path / "r", Config(), Pool.load(seed_dir), state)
    result = runner.invoke(app, ["status", "--run", str(run.path)])
    assert result.exit_code == 0, result.output
    assert "0.750" in result.output and "step 4" in result.output
    assert "careful-computation+detail-verifier: 4" in result.output


@pytest.mark.parametrize(
    ("files", "args", "expect"),
    [
        ({"moscopt.yaml": "pool:\n  k: 11\n"}, ["status"], "moscopt.yaml:1: field 'pool': K (11)"),
        ({"moscopt.yaml": "pool: [\n"}, ["status"], "moscopt.yaml:1: not valid YAML"),
        (
            {"moscopt.yaml": "colour: red\n"},
            ["status"],
            "moscopt.yaml:1: field 'colour': unknown key",
        ),
        (
            {"moscopt.yaml": "", "skills/a/SKILL.md": "no front matter\n"},
            ["status"],
            "SKILL.md:1: missing YAML front matter",
        ),
        (
            {"moscopt.yaml": "", "skills/a/SKILL.md": "---\nname: b\ndescription: d\n---\n"},
            ["status"],
            "does not match its folder name",
        ),
        ({"moscopt.yaml": ""}, ["status", "--run", "nope"], "nope: run directory not found"),
        ({"moscopt.yaml": ""}, ["status", "--run", "."], "not a moscopt run directory"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    args: list[str],
    expect: str,
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert expect in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_bad_flag_is_exit_2() -> None:
    result = runner.invoke(app, ["status", "--no-such-flag"])
    assert result.exit_code == 2


def test_benchmarks_lists_specs() -> None:
    result = runner.invoke(app, ["benchmarks"])
    assert result.exit_code == 0, result.output


def test_export_and_route_are_available() -> None:
    for cmd in ("export", "route"):
        result = runner.invoke(app, [cmd, "--help"])
        assert result.exit_code == 0 and "not available yet" not in result.output


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys\nfrom moscopt.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('litellm', 'torch', 'sentence_transformers', 'xllamacpp', "
        "'datasets', 'math_verify', 'rich') if m in sys.modules]\nprint('HEAVY', heavy)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr
