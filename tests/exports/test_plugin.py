"""The `plugin` export: the agents export as a Claude Code plugin, with the certificate in its
README; validated as the other exports are, and evaluated and routed as the agents export."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from export_env import Trained

from moscopt.exports.plugin import plugin_name


def export(trained: Trained, mode: str, *extra: str) -> Path:
    result = trained.invoke("export", "--mode", mode, "--run", str(trained.run), *extra)
    assert result.exit_code == 0, result.output
    return trained.root / trained.run / "exports" / mode


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_plugin_export_is_the_agents_export_in_a_plugins_layout(trained: Trained) -> None:
    plugin, agents = export(trained, "plugin"), export(trained, "agents")
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", manifest["name"])
    assert manifest["name"] == "addition-skills" and manifest["description"]
    ours, theirs = files(plugin), files(agents)
    skills = {k: v for k, v in ours.items() if k.startswith("skills/")}
    assert skills == {k: v for k, v in theirs.items() if k.startswith("skills/")}
    assert ours["ROUTING.md"] == theirs["ROUTING.md"]
    moscopt = json.loads(ours["moscopt-export.json"])
    assert moscopt["mode"] == "plugin" and moscopt["plugin"]["name"] == "addition-skills"
    readme = ours["README.md"].decode()
    assert "certificate: " in readme and "claude --plugin-dir" in readme
    assert "skill-router" in readme and "moscopt eval --export" in readme
    first = files(plugin)
    export(trained, "plugin", "--force")
    assert files(plugin) == first  # the same run, the same bytes


def test_every_skill_of_a_plugin_passes_the_reference_validator(trained: Trained) -> None:
    skills_ref = pytest.importorskip("skills_ref")
    out = export(trained, "plugin")
    for folder in sorted((out / "skills").iterdir()):
        assert skills_ref.validate(folder) == [], folder


def test_a_plugin_is_evaluated_and_routed_as_its_agents_export(trained: Trained) -> None:
    out = export(trained, "plugin")
    args = ["--run", str(trained.run), "--export", str(out), "--split", "test", "--json"]
    result = trained.invoke("eval", *args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["mode"] == "agents"
    routed = trained.invoke("route", "Compute 3 + 3. Count the apples.", "--export", str(out))
    assert routed.exit_code == 0, routed.output
    assert "cautious-planner" in routed.output


def test_plugin_names_are_kebab_case() -> None:
    assert plugin_name("gsm8k") == "gsm8k-skills"
    assert plugin_name("specs/My_Bench.yaml") == "my-bench-skills"
    assert plugin_name("2024 aime") == "pool-2024-aime-skills"
    assert plugin_name(None) == "trained-skills"
