"""The shipped Claude Code plugin and Codex snippet, and `moscopt install-agent`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from moscopt.cli import app

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "claude-code"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["install-agent", *args])
    return result.exit_code, result.output


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_the_marketplace_lists_the_plugin_at_a_path_of_the_clone() -> None:
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] and market["owner"]["name"]
    (entry,) = market["plugins"]
    source = ROOT / entry["source"]
    manifest = json.loads((source / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == entry["name"] == "moscopt"
    servers = json.loads((source / ".mcp.json").read_text())["mcpServers"]
    assert servers["moscopt"] == {"command": "moscopt", "args": ["mcp"]}


def test_the_plugin_has_the_slash_commands_and_a_valid_skill() -> None:
    commands = {p.stem: p.read_text() for p in (PLUGIN / "commands").glob("*.md")}
    assert set(commands) == {"plan", "train", "status", "adopt"}
    for text in commands.values():
        front = yaml.safe_load(text.split("---")[1])
        assert front["description"] and "$ARGUMENTS" in text
    skills_ref = pytest.importorskip("skills_ref")
    assert skills_ref.validate(PLUGIN / "skills" / "moscopt") == []


def test_the_codex_snippet_starts_the_server() -> None:
    config = tomllib.loads((ROOT / "plugins" / "codex" / "config.toml").read_text())
    assert config["mcp_servers"]["moscopt"]["command"] == "moscopt"
    assert config["mcp_servers"]["moscopt"]["args"] == ["mcp"]


def test_claude_code_into_a_project_is_idempotent_and_keeps_other_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    code, out = run("claude-code", "--dry-run")
    assert code == 0 and "would create" in out and "nothing was written" in out
    assert not (tmp_path / ".claude").exists()
    code, out = run("claude-code")
    assert code == 0, out
    assert f"created: {tmp_path / '.claude/commands/moscopt-train.md'}" in out
    assert f"replaced: {tmp_path / '.mcp.json'}" in out
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers == {
        "other": {"command": "x"},
        "moscopt": {"command": "moscopt", "args": ["mcp"]},
    }
    skill = tmp_path / ".claude/skills/moscopt/SKILL.md"
    assert skill.read_bytes() == (PLUGIN / "skills/moscopt/SKILL.md").read_bytes()
    first = tree(tmp_path)
    code, out = run("claude-code")
    assert code == 0 and "created" not in out and "replaced" not in out
    assert out.count("unchanged:") == 6 and tree(tmp_path) == first


def test_a_differing_file_of_the_user_is_never_overwritten_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    mine = {"mcpServers": {"moscopt": {"command": "/opt/moscopt", "args": ["mcp"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(mine))
    code, out = run("claude-code")
    assert code == 2 and ".mcp.json" in out and "--force" in out and "nothing was written" in out
    assert not (tmp_path / ".claude").exists()  # nothing else written either
    assert json.loads((tmp_path / ".mcp.json").read_text()) == mine
    edited = tmp_path / ".claude/commands/moscopt-plan.md"
    edited.parent.mkdir(parents=True)
    edited.write_text("my own plan command\n")
    code, out = run("claude-code", "--force")
    assert code == 0 and f"replaced: {edited}" in out
    assert "$ARGUMENTS" in edited.read_text()
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["moscopt"]["command"] == (
        "moscopt"
    )


def test_codex_gets_the_skill_and_its_config_table_beside_the_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.chdir(tmp_path)
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs"\n')
    code, out = run("codex")
    assert code == 0, out
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3" and data["mcp_servers"]["docs"] == {"command": "docs"}
    assert data["mcp_servers"]["moscopt"]["args"] == ["mcp"]
    assert (home / ".agents/skills/moscopt/SKILL.md").is_file()
    before = config.read_text()
    assert run("codex")[0] == 0 and config.read_text() == before  # idempotent
    config.write_text(before.replace('args = ["mcp"]', 'args = ["mcp", "--project", "x"]'))
    code, out = run("codex")
    assert code == 2 and "[mcp_servers.moscopt]" in out
    code, out = run("codex", "--force")
    assert code == 0 and tomllib.loads(config.read_text())["mcp_servers"]["moscopt"]["args"] == [
        "mcp"
    ]
    assert tomllib.loads(config.read_text())["mcp_servers"]["docs"] == {"command": "docs"}


def test_an_unknown_agent_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run("cursor")
    assert code == 2 and "claude-code or codex" in out
