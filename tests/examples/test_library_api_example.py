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
