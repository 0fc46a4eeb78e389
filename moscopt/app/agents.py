"""`moscopt install-agent`: moscopt's skill, slash commands and MCP server put where an agent
reads them (the shipped `plugins/` folder: `claude-code/` and `codex/`).

- Claude Code, in a project (the default): `.claude/skills/moscopt/`, `.claude/commands/
  moscopt-<name>.md` and the server in `.mcp.json`; `--user`: `~/.claude/skills/moscopt/` and
  `~/.claude/commands/` (the user-level server is Claude Code's own to register: the command
  to run is printed). The same files as a plugin: `/plugin marketplace add <clone>`.
- Codex: the skill in `~/.agents/skills/moscopt/` and the server as `[mcp_servers.moscopt]` in
  `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`); `--project`: `.agents/skills/`
  and `.codex/config.toml`.

Idempotent: a file already as it should be is left alone. A file of the user's that differs (a
`moscopt` server entry of their own, an edited command) is never overwritten without `force`;
nothing is written when one would be (every conflict is found before the first write).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from moscopt.core.resources import data_dir
from moscopt.errors import UserError
from moscopt.run.fsio import atomic_write_text

AGENTS = ("claude-code", "codex")
SERVER = {"command": "moscopt", "args": ["mcp"]}


@dataclass(frozen=True)
class Planned:
    """One file: what it will hold, and what happens to it (`create`, `update`, `keep`)."""

    path: Path
    text: str
    action: str


def plugin_dir(agent: str) -> Path:
    return data_dir("plugins") / agent


def install_agent(
    agent: str, *, user: bool, root: Path, home: Path, force: bool, dry_run: bool
) -> tuple[list[Planned], list[str]]:
    """Write (unless `dry_run`) what `agent` needs; the files and the steps left to the user."""
    if agent not in AGENTS:
        raise UserError(f"unknown agent '{agent}' (claude-code or codex)", field="agent")
    if agent == "claude-code":
        files, configs, steps = _claude_code(root, home, user, force)
    else:
        files, configs, steps = _codex(root, home, user, force)
    planned = [_plan(path, text, force) for path, text in files]
    # a config file is merged into (the user's other entries kept): only moscopt's own entry
    # can conflict, and its merge function has checked it
    planned += [_plan(path, text, True) for path, text in configs]
    if not dry_run:
        for p in planned:
            if p.action != "keep":
                p.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(p.path, p.text)
    return planned, steps


def _plan(path: Path, text: str, force: bool) -> Planned:
    if not path.exists():
        return Planned(path, text, "create")
    if path.read_text(encoding="utf-8") == text:
        return Planned(path, text, "keep")
    if not force:
        raise _conflict(path, "it")
    return Planned(path, text, "update")


def _conflict(path: Path, what: str) -> UserError:
    return UserError(
        f"{what} differs from what moscopt would write: nothing was written (pass --force to "
        "replace it)",
        path=path,
    )


def _skill_files(target: Path) -> list[tuple[Path, str]]:
    source = plugin_dir("claude-code") / "skills" / "moscopt"
    return [
        (target / p.relative_to(source), p.read_text(encoding="utf-8"))
        for p in sorted(source.rglob("*"))
        if p.is_file()
    ]


Files = list[tuple[Path, str]]


def _claude_code(root: Path, home: Path, user: bool, force: bool) -> tuple[Files, Files, list[str]]:
    base = home / ".claude" if user else root / ".claude"
    files = _skill_files(base / "skills" / "moscopt")
    for command in sorted((plugin_dir("claude-code") / "commands").glob("*.md")):
        files.append((base / "commands" / f"moscopt-{command.name}", command.read_text("utf-8")))
    if user:
        return files, [], ["register the server for every project: claude mcp add --scope user "
                           "moscopt -- moscopt mcp"]  # fmt: skip
    config = root / ".mcp.json"
    steps = ["start Claude Code in this folder and approve the project's moscopt server"]
    return files, [(config, _mcp_json(config, force))], steps


def _mcp_json(path: Path, force: bool) -> str:
    """The project's `.mcp.json` with the moscopt server in it (its other servers kept)."""
    data: dict[str, object] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise UserError(f"is not valid JSON ({e.msg})", path=path, line=e.lineno) from None
        if not isinstance(data, dict):
            raise UserError("must hold a JSON object", path=path)
    servers = data.get("mcpServers")
    servers = dict(servers) if isinstance(servers, dict) else {}
    if servers.get("moscopt") == SERVER:
        return path.read_text(encoding="utf-8")
    if "moscopt" in servers and not force:
        raise _conflict(path, "its mcpServers.moscopt")
    servers["moscopt"] = SERVER
    return json.dumps({**data, "mcpServers": servers}, indent=2) + "\n"


def _codex(root: Path, home: Path, user: bool, force: bool) -> tuple[Files, Files, list[str]]:
    skills = (home if user else root) / ".agents" / "skills" / "moscopt"
    files = _skill_files(skills)
    codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    config = codex_home / "config.toml" if user else root / ".codex" / "config.toml"
    return files, [(config, _codex_config(config, force))], ["check it: codex mcp list"]


def _codex_config(path: Path, force: bool) -> str:
    """`path`'s text with the `[mcp_servers.moscopt]` table of the shipped snippet in it."""
    snippet = (plugin_dir("codex") / "config.toml").read_text(encoding="utf-8")
    table = snippet[snippet.index("[mcp_servers.moscopt]") :]
    wanted = tomllib.loads(table)["mcp_servers"]["moscopt"]
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        current = tomllib.loads(text).get("mcp_servers", {}).get("moscopt")
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"is not valid TOML ({e})", path=path) from None
    if current == wanted:
        return text
    if current is not None and not force:
        raise _conflict(path, "its [mcp_servers.moscopt]")
    kept = _without_table(text, "mcp_servers.moscopt") if current is not None else text
    sep = "" if not kept or kept.endswith("\n\n") else ("\n" if kept.endswith("\n") else "\n\n")
    return kept + sep + table


def _without_table(text: str, name: str) -> str:
    """`text` without the TOML table `[name]` and its sub-tables (`[name.env]`)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        head = line.strip()
        if head.startswith("[") and not head.startswith("[["):
            key = head.strip("[]").strip()
            skipping = key == name or key.startswith(name + ".")
        if not skipping:
            out.append(line)
    return "".join(out)
