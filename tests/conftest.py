from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point every user-level directory at a temp dir: tests never touch the real home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MOSCOPT_HOME", str(home / ".moscopt"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))  # the user's config file
    for name in (
        "MOSCOPT_USER_CONFIG",
        "MOSCOPT_MODEL",
        "MOSCOPT_API_BASE",
        "MOSCOPT_CONFIG",
        "MOSCOPT_TRACE",
    ):
        monkeypatch.delenv(name, raising=False)  # a developer's shell sets no test's options
    return home


@pytest.fixture
def seed_dir() -> Path:
    return REPO / "skills"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed_dir: Path) -> Path:
    """The scripted addition project (`moscopt.testing.scripted.write_project`) as the working
    directory, with a dummy key (the loopback server ignores it). A test file may define its own."""
    from moscopt.testing.scripted import write_project

    write_project(tmp_path, seed_dir)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return tmp_path
