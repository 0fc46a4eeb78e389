from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from tests.examples.conftest import Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_library_api_example(example: Callable[..., Example]) -> None:
    ex = example("library-api")
    env = ex.env()
    result = ex.run(
        sys.executable, "train_with_api.py", "--model", env["MODEL"], "--api-base", env["API_BASE"]
    )
    lines = result.stdout.splitlines()
    assert lines[0].startswith("validation: 0.0 -> 1.0")
    assert lines[2].startswith("test: trained 1.000") and "no skills 0.000" in lines[2]
    assert "'Compute 12 + 30.' -> (" in lines[3] and "careful-computation" in lines[3]


def test_library_api_example_fails_in_one_line_and_reruns(
    example: Callable[..., Example],
) -> None:
    """A provider that refuses the script ends it with one line, not a traceback; run again, it
    trains into a new folder (issue 28 item 9)."""
    from moscopt.testing import FakeServer

    ex = example("library-api")
    argv = (sys.executable, "train_with_api.py", "--model", ex.env()["MODEL"], "--api-base")
    with FakeServer(fault_rate=1.0, faults=["401"]) as refusing:
        failed = ex.run(*argv, refusing.url, check=False)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("train_with_api.py: "), failed.stderr
    result = ex.run(*argv, ex.env()["API_BASE"])
    assert result.stdout.startswith("validation: 0.0 -> 1.0")
    assert len(list((ex.folder / "runs").iterdir())) == 2
