from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _shared_data_dir() -> Path | None:
    """CI keeps the data at ../shared/data next to the clone; env and /work/shared/data next."""
    candidates = [REPO / ".." / "shared" / "data"]
    if os.environ.get("MOSCOPT_SHARED_DATA"):
        candidates.append(Path(os.environ["MOSCOPT_SHARED_DATA"]))
    candidates.append(Path("/work/shared/data"))
    for c in candidates:
        if (c / "SOURCES.md").is_file():
            return c.resolve()
    return None


@pytest.fixture
def shared_data() -> Path:
    found = _shared_data_dir()
    if found is None:
        pytest.skip("shared benchmark data not found (../shared/data or $MOSCOPT_SHARED_DATA)")
    return found


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose their data explicitly; a developer's MOSCOPT_DATA_DIR must not leak in."""
    monkeypatch.delenv("MOSCOPT_DATA_DIR", raising=False)
