"""The library API type-checks in user code under `mypy --strict` (py.typed, plain functions
with real signatures and concrete result types)."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import moscopt

SCRIPT = Path(__file__).with_name("typed_user_script.py")


def test_the_api_functions_are_plain_functions_with_signatures() -> None:
    for name in ("train", "evaluate", "export", "route"):
        function = getattr(moscopt, name)
        assert inspect.isfunction(function), name
        assert "lm" in inspect.signature(function).parameters
        assert function.__doc__ and "Example" in function.__doc__, name
    assert (Path(moscopt.__file__).parent / "py.typed").is_file()


@pytest.mark.slow
def test_a_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    if shutil.which("mypy") is None and not _has_mypy():
        pytest.skip("mypy is not installed (the dev extra)")
    script = tmp_path / "user.py"
    script.write_text(SCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file=", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / ".mypy_cache"), str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def _has_mypy() -> bool:
    import importlib.util

    return importlib.util.find_spec("mypy") is not None
