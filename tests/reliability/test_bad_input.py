"""Bad input files through `train`, `eval` and `status`: exit 2, one line naming the file and the
line or field, and nothing on disk changes (the project tree is hashed before and after).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moscopt.cli import app

from .helpers import snapshot

runner = CliRunner()
API = ["--model", "openai/scripted", "--api-base", "http://127.0.0.1:9"]
COMMANDS = {
    "train": [
        "train", "--benchmark", "addition.yaml", "--data", "addition.jsonl", *API,
        "--run", "runs/r1",
    ],
    "eval": [
        "eval", "--benchmark", "addition.yaml", "--data", "addition.jsonl", *API,
        "--skills", "skills", "--split", "test",
    ],
    "status": ["status"],
}  # fmt: skip
Mutation = Callable[[Path], None]


def write(name: str, data: str | bytes) -> Mutation:
    def mutate(root: Path) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)

    return mutate


def append(name: str, data: str | bytes) -> Mutation:
    def mutate(root: Path) -> None:
        with open(root / name, "ab") as f:
            f.write(data if isinstance(data, bytes) else data.encode())

    return mutate


def remove(name: str) -> Mutation:
    return lambda root: shutil.rmtree(root / name)


SKILL = "skills/careful-computation/SKILL.md"
# case: (mutation, the commands that read the file, a regex the one-line message must match)
CASES: dict[str, tuple[Mutation, tuple[str, ...], str]] = {
    "config-invalid-yaml": (
        write("moscopt.yaml", "pool:\n  n: [3,\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:\d+: .*YAML",
    ),
    "config-unknown-key": (
        write("moscopt.yaml", "pool:\n  n: 3\n  colour: red\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:3: field 'pool\.colour'",
    ),
    "config-wrong-type": (
        write("moscopt.yaml", "seed: 1\npool:\n  k: many\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:3: field 'pool\.k'",
    ),
    "config-k-above-n": (
        write("moscopt.yaml", "pool:\n  n: 2\n  k: 3\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:\d+: field 'pool'.*K \(3\) must not exceed N \(2\)",
    ),
    "config-not-utf8": (
        write("moscopt.yaml", b"seed: 1\npool:\n  n: \xff\xfe3\n"),
        ("train", "eval", "status"),
        r"moscopt\.yaml:3: not valid UTF-8",
    ),
    "skills-dir-missing": (remove("skills"), ("train", "eval", "status"), r"skills\b.*not found"),
    "skill-name-not-folder": (
        write(SKILL, "---\nname: detail-verifier\ndescription: d\n---\n\nbody\n"),
        ("train", "eval", "status"),
        r"careful-computation/SKILL\.md.*field 'name'.*detail-verifier",
    ),
    "skill-duplicate-name": (
        write("skills/copy/SKILL.md", "---\nname: careful-computation\ndescription: d\n---\n\nb\n"),
        ("train", "eval", "status"),
        r"copy/SKILL\.md.*careful-computation",
    ),
    "skill-no-front-matter": (
        write(SKILL, "# Careful computation\n\nNo front matter here.\n"),
        ("train", "eval", "status"),
        r"careful-computation/SKILL\.md:1: missing YAML front matter",
    ),
    "skill-bad-front-matter-yaml": (
        write(SKILL, "---\nname: careful-computation\ndescription: [unclosed\n---\n\nbody\n"),
        ("train", "eval", "status"),
        r"careful-computation/SKILL\.md:\d+: ",
    ),
    "skill-not-utf8": (
        write(SKILL, b"---\nname: careful-computation\ndescription: d\n---\n\n\xff body\n"),
        ("train", "eval", "status"),
        r"careful-computation/SKILL\.md:6: not valid UTF-8",
    ),
    "data-bad-json-line": (
        append("addition.jsonl", '{"id": "a99", "question": "Compute 1 + 1."\n'),
        ("train", "eval"),
        r"addition\.jsonl:15: ",
    ),
    "data-missing-field": (
        append("addition.jsonl", '{"id": "a99", "question": "Compute 1 + 1."}\n'),
        ("train", "eval"),
        r"addition\.jsonl:15: .*answer",
    ),
    "data-not-utf8": (
        append("addition.jsonl", b'{"id": "a99", "question": "\xff", "answer": "2"}\n'),
        ("train", "eval"),
        r"addition\.jsonl:15: not valid UTF-8",
    ),
    "spec-unknown-key": (
        append("addition.yaml", "colour: red\n"),
        ("train", "eval"),
        r"addition\.yaml(:\d+)?: field 'colour'",
    ),
}
PARAMS = [(case, cmd) for case, (_, cmds, _) in sorted(CASES.items()) for cmd in cmds]


def one_line_error(output: str, pattern: str) -> str:
    """The one line of `output`, a `moscopt: error:` that matches `pattern`."""
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moscopt: error: "), output
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def refused_on_bad_project(project: Path, mutate: Mutation, command: str) -> str:
    """The output of `COMMANDS[command]` in `project` damaged by `mutate`: exit 2 is asserted,
    and that nothing was written (no run started)."""
    mutate(project)
    before = snapshot(project)
    result = runner.invoke(app, COMMANDS[command])
    assert result.exit_code == 2, result.output
    assert snapshot(project) == before
    assert not (project / "runs").exists()
    return result.output


@pytest.mark.parametrize(("case", "command"), PARAMS)
def test_bad_file_is_exit_2_one_line_nothing_written(
    project: Path, case: str, command: str
) -> None:
    mutate, _, expect = CASES[case]
    output = refused_on_bad_project(project, mutate, command)
    one_line_error(output, expect)
    assert "Traceback" not in output


# -- a damaged run directory: `status --run`, `train --resume`, `eval --run` -----------------------


def corrupt_state(root: Path) -> None:
    path = root / "state.json"
    path.write_text(path.read_text()[:-40])


def replace_in(name: str, old: str, new: str) -> Mutation:
    def mutate(root: Path) -> None:
        path = root / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    return mutate


def corrupt_checkpoint(root: Path) -> None:
    for path in (root / "checkpoints").glob("*.json"):
        path.write_text('{"skills": [')


def corrupt_event_line(root: Path) -> None:
    path = root / "events.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][: len(lines[1]) // 2] + "\n"
    path.write_text("".join(lines))


RUN_CASES: dict[str, tuple[Mutation, tuple[str, ...], str]] = {
    "state-truncated": (
        corrupt_state,
        ("status", "resume", "eval"),
        r"state\.json:\d+: not valid JSON",
    ),
    "state-wrong-type": (
        replace_in("state.json", '"step": ', '"step": "three", "x": '),
        ("status", "resume", "eval"),
        r"state\.json.*field 'step'",
    ),
    "state-not-utf8": (
        write("state.json", b'{"step": "\xff"}'),
        ("status", "resume", "eval"),
        r"state\.json:1: not valid UTF-8",
    ),
    "frozen-config-unknown-key": (
        append("moscopt.yaml", "colour: red\n"),
        ("status", "resume", "eval"),
        r"moscopt\.yaml:\d+: field 'colour'",
    ),
    "checkpoint-corrupt": (
        corrupt_checkpoint,
        ("resume", "eval"),
        r"checkpoints/.*\.json: checkpoint is corrupt",
    ),
    "events-bad-middle-line": (
        corrupt_event_line,
        ("resume",),  # status reads the totals in state.json, not the log
        r"events\.jsonl:2: bad JSON line",
    ),
}
RUN_COMMANDS = {
    "status": ["status", "--run", "runs/r1"],
    "resume": ["train", "--resume", "--run", "runs/r1"],
    "eval": ["eval", "--run", "runs/r1", "--split", "test"],
}
RUN_PARAMS = [(case, cmd) for case, (_, cmds, _) in sorted(RUN_CASES.items()) for cmd in cmds]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with a run stopped by its call budget (so that `--resume` has work to do)."""
    from moscopt.testing import FakeServer
    from moscopt.testing.scripted import server_responder, write_project

    from .helpers import FAST_RETRIES, train_args

    root = tmp_path_factory.mktemp("stopped")
    write_project(root, Path(__file__).resolve().parents[2] / "skills", FAST_RETRIES)
    with pytest.MonkeyPatch.context() as mp, FakeServer(responder=server_responder) as server:
        mp.chdir(root)
        result = runner.invoke(app, [*train_args(server.url), "--max-calls", "12"])
    assert result.exit_code == 1 and "budget" in result.output, result.output
    return root


def refused_on_damaged_run(
    stopped_run: Path, root: Path, monkeypatch: pytest.MonkeyPatch, mutate: Mutation, command: str
) -> str:
    """The output of `RUN_COMMANDS[command]` in a copy of the stopped run's project, its run
    damaged by `mutate`: exit 2 is asserted, and that nothing was written (the response cache
    aside: a SQLite database, which opening may checkpoint)."""
    project = root / "p"
    shutil.copytree(stopped_run, project)
    monkeypatch.chdir(project)
    mutate(project / "runs/r1")
    before = snapshot(project)
    result = runner.invoke(app, RUN_COMMANDS[command])
    assert result.exit_code == 2, result.output
    assert strip_cache(snapshot(project)) == strip_cache(before)
    return result.output


@pytest.mark.parametrize(("case", "command"), RUN_PARAMS)
def test_damaged_run_is_exit_2_one_line_nothing_written(
    stopped_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, command: str
) -> None:
    mutate, _, expect = RUN_CASES[case]
    one_line_error(
        refused_on_damaged_run(stopped_run, tmp_path, monkeypatch, mutate, command), expect
    )


def strip_cache(files: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in files.items() if not k.startswith("runs/r1/cache/")}
