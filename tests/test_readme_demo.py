"""README command 1 and its quoted output (issue 28 item 4; the quote is in the guide's Getting
started page since issue 42): the quote must have the shape of what `moscopt train` prints with
the README's own flags. The run here uses the loopback fake
server instead of the embedded model (same flags, same offline benchmark, same seed library),
so numbers, skill names and verdicts differ; the kinds of lines, their order and the fields of
each line must not."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moscopt.cli import app
from moscopt.routing.gate import schema_answer, schema_ids
from moscopt.testing import FakeServer

README = Path(__file__).resolve().parents[1] / "README.md"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"
STEP = re.compile(r"^\[\d+/\d+\] step \d+ (\w+): (start|edit \S+ \w+ \([\d.]+\)|finished)$")


def readme_command() -> list[str]:
    """The `moscopt train ...` part of the set-up command, as argv."""
    text = README.read_text()
    line = next(ln for ln in text.splitlines() if "moscopt train --benchmark offline" in ln)
    return shlex.split(line[line.index("moscopt train") :].rstrip().rstrip(")"))[2:]


def readme_quote() -> list[str]:
    """The output block the guide quotes as command 1's output."""
    text = GUIDE.read_text()
    start = text.index("```\n", text.index("What the\ncommand printed")) + 4
    return text[start : text.index("```", start)].splitlines()


def shape(line: str) -> str | None:
    """A printed line without its numbers, names and paths; None for lines that depend on
    timing (`... still working`)."""
    if line.startswith("... still working"):
        return None
    head, *fields = line.split(" | ")
    m = STEP.match(head)
    if m:
        what = "edit" if m.group(2).startswith("edit") else m.group(2)
        kinds = [re.sub(r"[-+$\d.%k/ ]+", " ", f).split()[0] for f in fields]
        return f"step {m.group(1)}: {what} | " + " | ".join(kinds)
    for prefix in ("run:", "validation score:", "skills:"):
        if line.startswith(prefix):
            unchanged = "(pool unchanged" in line
            return prefix + (" unchanged" if unchanged else "")
    return f"other: {line}"


def small_model(body: dict[str, Any]) -> str:
    """Answers as a grammar-constrained small model would, by the call's shape: the schema it
    carries (gate, proposal, new skill), else plain text (an agent's answer or an analysis)."""
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if schema is None:
        return "- Check the arithmetic.\nFINAL ANSWER: 0"
    props = schema["properties"]
    if "activate" in props:
        ids, k = schema_ids(schema)
        return json.dumps(schema_answer(schema, ids[:k]))
    if "edits" in props:
        edit = {"op": "add", "anchor": "", "content": "Check every number twice."}
        return json.dumps({"reasoning": "Too few checks.", "edits": [edit]})
    lines = ["1. Read the task.", "2. Compute.", "3. Check twice.", "4. Answer."]
    return json.dumps({"name": "checker", "description": "Checks twice.", "lines": lines})


def test_the_readme_command_is_the_short_demo() -> None:
    assert '--8<-- "README.md:setup"' in GUIDE.read_text()  # the guide shows the same command
    argv = readme_command()
    assert argv[:2] == ["--benchmark", "offline"]
    assert "--model" not in argv  # the embedded model, no key
    assert {"--limit", "--epochs", "--steps-per-epoch", "--max-tokens"} <= set(argv)


@pytest.mark.slow
def test_the_readme_quote_has_the_shape_of_what_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    runner = CliRunner()
    assert runner.invoke(app, ["init", "demo"]).exit_code == 0
    monkeypatch.chdir(tmp_path / "demo")
    with FakeServer(responder=small_model) as server:
        argv = ["train", *readme_command(), "--model", "openai/small", "--api-base", server.url]
        # the embedded model's constrained gate (gating.output auto is json for local/ only)
        result = runner.invoke(app, [*argv, "--set", "gating.output=json"])
    assert result.exit_code == 0, result.output
    printed = [s for s in map(shape, result.output.splitlines()) if s is not None]
    quoted = [s for s in map(shape, readme_quote()) if s is not None]
    # a run may validate an unchanged pool or accept an edit; the quote shows one such run
    printed = [s.replace(" unchanged", "") for s in printed]
    quoted = [s.replace(" unchanged", "") for s in quoted]
    assert quoted == printed
