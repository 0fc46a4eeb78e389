from __future__ import annotations

from collections.abc import Callable

import pytest

from moscopt.core.skills import Pool
from tests.examples.conftest import Example

pytestmark = pytest.mark.slow  # runs the example's commands end to end


def test_deploy_export_example(example: Callable[..., Example]) -> None:
    ex = example("deploy-export")
    out = ex.run("bash", "run.sh").stdout
    assert "for Agent Skills agents:" in out and "mode=agents" in out
    assert "agents table" in out and "ACTIVATE:" in out  # moscopt route on the export
    for where in (".claude/skills", ".agents/skills"):
        deployed = Pool.load(ex.folder / "my-app" / where)
        assert "skill-router" in deployed.names and deployed.gate is None
