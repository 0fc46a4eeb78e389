"""The `plugin` export: a trained pool as a Claude Code plugin, installable as is.

The plugin is the `agents` export (`moscopt.exports.agent_skills`: every skill with its routing
in its description, and the `skill-router` skill) in a plugin's layout::

    <out>/
      .claude-plugin/plugin.json   the manifest (name, version, description)
      skills/<name>/SKILL.md       the skills (Claude Code loads them as /<plugin>:<name>)
      ROUTING.md                   the routing table, for `moscopt eval` and `moscopt route`
      README.md                    what it is, how to install it, the certificate, the scores
      moscopt-export.json          moscopt's manifest (mode `plugin`)

`moscopt eval --export` evaluates it as the agents export it holds. Nothing here calls a model:
the same run gives the same bytes.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moscopt.benchmarks import Benchmark, Splits
    from moscopt.config import Config
    from moscopt.core.skills import Pool, Skill
    from moscopt.run.rundir import RunDir
    from moscopt.run.state import RunState

PLUGIN_MANIFEST = ".claude-plugin/plugin.json"


def plugin_name(benchmark: str | None) -> str:
    """A kebab-case plugin name from the benchmark's (`gsm8k` -> `gsm8k-skills`)."""
    stem = (benchmark or "trained").rsplit("/", 1)[-1].removesuffix(".yaml").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", stem).strip("-") or "trained"
    if not slug[0].isalpha():
        slug = "pool-" + slug
    return f"{slug}-skills"


def plugin_export(
    run: RunDir,
    config: Config,
    state: RunState,
    pool: Pool,
    k: int,
    resolved: tuple[Benchmark, Splits] | None = None,
) -> tuple[list[Skill], dict[str, str], dict[str, Any], dict[str, Any]]:
    """(the skills, the plugin's other files, the agents summary, the plugin summary)."""
    from moscopt._version import __version__
    from moscopt.exports.agent_skills import ROUTER_SKILL, agents_export
    from moscopt.optimizer.engine.certificate import latest, line

    members, routing, agents = agents_export(run, config, state, pool, k, resolved)
    name = plugin_name(state.benchmark)
    certificate = latest(run, state)
    cert_line = line(certificate, run) if certificate is not None else None
    verdict = certificate.verdict if certificate is not None else None
    description = (
        f"Skills trained by moscopt on {state.benchmark or 'a benchmark'} with {config.model}; "
        f"start with the {ROUTER_SKILL} skill, which says which skills to use together."
    )
    manifest = {
        "name": name,
        "version": f"{__version__}+{(state.pool_digest or 'pool')[:12]}",
        "description": description,
        "keywords": ["agent-skills", "moscopt"],
    }
    readme = _readme(name, description, run, state, config, members, cert_line, agents)
    files = {
        PLUGIN_MANIFEST: json.dumps(manifest, indent=2) + "\n",
        "ROUTING.md": routing,
        "README.md": readme,
    }
    summary = {
        "name": name,
        "manifest": PLUGIN_MANIFEST,
        "certificate": verdict,
        "install": f"claude --plugin-dir <this folder> (skills as /{name}:<skill>)",
    }
    return members, files, agents, summary


def _readme(
    name: str,
    description: str,
    run: RunDir,
    state: RunState,
    config: Config,
    members: list[Skill],
    cert_line: str | None,
    agents: dict[str, Any],
) -> str:
    from moscopt.exports.agent_skills import ROUTER_SKILL

    best = state.cursor.best_val
    rows = "\n".join(
        f"| `{s.name}` | {_q(state.q.get(s.name))} | {state.activations.get(s.name, 0)} |"
        for s in members
    )
    lines = [
        f"# {name}",
        "",
        description,
        "",
        "## Install",
        "",
        f"- For one session: `claude --plugin-dir {name}` (this folder); its skills are "
        f"`/{name}:<skill>`.",
        "- In a marketplace: list this folder in a `.claude-plugin/marketplace.json` "
        f'(`{{"name": "{name}", "source": "./{name}"}}`), then `/plugin marketplace add` and '
        f"`/plugin install {name}@<marketplace>`.",
        "- Without the plugin: copy `skills/*` into `.claude/skills/` (Claude Code) or "
        "`.agents/skills/` (Codex).",
        "",
        "## Evidence",
        "",
        f"- {cert_line or 'certificate: none (the run recorded no certificate)'}",
        f"- benchmark `{state.benchmark}`, model `{config.model}`, validation score "
        f"{_q(best)} (the mixture's, as training measured it); run `{run.path.resolve().name}` "
        f"at step {state.step}, pool `{(state.pool_digest or '')[:12]}`",
        "- evaluate it: `moscopt eval --export <this folder> --split test`",
        "",
        "## Routing",
        "",
        f"Read `{ROUTER_SKILL}` first: it says which skills to use together for a task "
        f"({agents.get('word_rules', 0)} rules learned from the gate's decisions on training "
        "tasks; `ROUTING.md` holds the same table).",
        "",
        "| skill | Q | activations |",
        "|---|---|---|",
        rows,
        "",
    ]
    return "\n".join(lines)


def _q(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
