from __future__ import annotations

from pathlib import Path

import pytest

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"


@pytest.fixture
def sessions_dir() -> Path:
    """The real Claude Code and Codex transcripts (tests/fixtures/sessions/README.md)."""
    return SESSIONS
