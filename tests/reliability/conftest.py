"""Fixtures of the reliability suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from moscopt.testing.scripted import write_project

from .helpers import FAST_RETRIES


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    """The scripted project (three skills, a gate, the `addition` benchmark) as the cwd."""
    write_project(tmp_path, seed_dir, FAST_RETRIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    return tmp_path
