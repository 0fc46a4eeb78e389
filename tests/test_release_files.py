"""Issue 17, section 7: a LICENSE that matches pyproject, and the docs (the README until issue
42) document what a user sets (MOSCOPT_CACHE_DIR, MOSCOPT_HOME) and every exit code the commands
use."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from moscopt.cli.eval import TASKS_ERRORED
from moscopt.lm.cache import CACHE_ENV, HOME_ENV

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference" / "exit-codes.md"


def test_the_license_file_is_the_mit_license_that_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "MIT" and text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the moscopt authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def docs_table(heading: str) -> dict[str, str]:
    """The first column -> second column of the table that follows `heading` in the docs'
    reference page of exit codes and environment variables."""
    text = REFERENCE.read_text()
    after = text[text.index(heading) :]
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|$", after.split("\n\n", 2)[1], re.M)
    return {k.strip("`"): v for k, v in rows if not set(k) <= {"-"}}


def test_the_docs_document_the_environment_variables() -> None:
    env = docs_table("Environment variables moscopt reads:")
    assert {CACHE_ENV, HOME_ENV, "MOSCOPT_DATA_DIR"} <= set(env)
    assert "$MOSCOPT_HOME/cache" in env[HOME_ENV]


def test_the_docs_document_every_exit_code() -> None:
    codes = docs_table("Exit codes:")
    assert set(codes) >= {"0", "1", "2", str(TASKS_ERRORED), "130"}
    assert "interrupted" in codes["130"] and "errored" in codes[str(TASKS_ERRORED)]
    used = set()
    for path in (ROOT / "moscopt" / "cli").glob("*.py"):
        used |= set(re.findall(r"typer\.Exit\((\d+)\)", path.read_text()))
    assert used <= set(codes), f"exit codes used but not documented: {used - set(codes)}"
