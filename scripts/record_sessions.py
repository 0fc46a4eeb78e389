"""Record real Claude Code and Codex transcripts on this machine, for the harvest's fixtures.

    python scripts/record_sessions.py [--out tests/fixtures/sessions] [--prefix DIR]

Installs `@openai/codex` and `@anthropic-ai/claude-code` from npm into a temporary prefix
(or `--prefix`), starts a loopback server that speaks their APIs
(`moscopt.testing.agent_api_server`: OpenAI Responses for Codex, through a custom model
provider whose base_url is the server; Anthropic Messages for Claude Code, through
ANTHROPIC_BASE_URL), and runs scripted non-interactive sessions with HOME in a temporary
folder: `codex exec "<request>"` then `codex exec resume --last "<correction>"`, and
`claude -p "<request>"` then `claude -p --continue "<correction>"`. The scripted agent ignores
the user's standing preferences at first, so the user corrects it ("no — always put the risks
first", "use our logger, not print").

Nothing goes to an outside address: the clients get only the loopback URL, a placeholder key,
their telemetry and updates switched off, and HTTP(S)_PROXY pointed at a closed loopback port,
so any other request fails on this machine. The transcripts the CLIs wrote are copied into
`--out` (`claude-code/<project-slug>/*.jsonl`, `codex/YYYY/MM/DD/rollout-*.jsonl`), with the
temporary folders' paths replaced by `/home/user` (the project: `/home/user/project`, its
Claude Code folder `-home-user-project`) so that the fixtures do not depend on where they
were recorded; nothing else is changed. The CLI versions go to `--out/VERSIONS.txt`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from moscopt.testing.agent_api_server import (
    CLOSED_PROXIES,
    AgentAPIServer,
    claude_environment,
    cli_version,
    codex_environment,
)

PACKAGES = ("@openai/codex", "@anthropic-ai/claude-code")
FAKE_HOME = "/home/user"
# (request, correction) pairs: one CLI session each
CODEX_SESSIONS = [
    ("Write the weekly status report for the billing service", "no — always put the risks first"),
    ("Add retry logic to fetch_user in api.py", "Use `log.warning` instead of `print`."),
    (
        "Write the weekly status report for the search service",
        'No, always put the risks first. And add a "Next steps" section.',
    ),
]
CLAUDE_SESSIONS = [
    ("Write the weekly status report for the payments service", "no — always put the risks first"),
    (
        "Summarize yesterday's incident for the on-call channel",
        "too long — keep it under 80 words",
    ),
    (
        "Why does the deploy fail? Here is my .env:\n"
        "DATABASE_URL=postgres://app:Fake-Pass-0000@db.internal/app\n"
        "INTERNAL_API_TOKEN=fake0000Token1111fake2222Token3333",
        "that's wrong. Never echo secrets from .env in your answer.",
    ),
]


def reply(text: str) -> str:
    """The scripted agent: forgets the user's preferences until corrected in the session."""
    low = text.lower()
    if "risks first" in low:
        steps = "\n\n## Next steps\nShip the fix on Monday." if "next steps" in low else ""
        return "## Risks\nThe nightly export is slow.\n\n## Status\nOn track." + steps
    if "status report" in low:
        return "## Status\nOn track.\n\n## Risks\nThe nightly export is slow."
    if "log.warning" in low or "logger" in low:
        return "```python\nfor attempt in range(3):\n    log.warning('retrying %s', attempt)\n```"
    if "retry" in low:
        return "```python\nfor attempt in range(3):\n    print('retrying', attempt)\n```"
    if "80 words" in low:
        return "Checkout failed 02:10-02:40 UTC: a bad config push. Rolled back; no data lost."
    if "incident" in low:
        return "At 02:10 UTC a configuration push " + "caused checkout errors and " * 30 + "ended."
    if "secrets" in low:
        return "The database host is unreachable from the deploy runner; check the VPN route."
    if ".env" in low:
        return "Your DATABASE_URL points at db.internal, which the runner cannot resolve."
    return "Done."


def clean_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        **CLOSED_PROXIES,  # any outside request fails here
    }
    env.update(extra)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180
    )
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def install(prefix: Path) -> Path:
    bin_dir = prefix / "node_modules" / ".bin"
    if not (bin_dir / "codex").exists() or not (bin_dir / "claude").exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *PACKAGES],
            check=True,
        )
    return bin_dir


def record_codex(bin_dir: Path, home: Path, project: Path, url: str) -> None:
    env = clean_env(home, codex_environment(home / ".codex", url))
    codex = [str(bin_dir / "codex"), "exec", "--skip-git-repo-check"]
    for request, correction in CODEX_SESSIONS:
        run([*codex, request], project, env)
        run([*codex, "resume", "--last", correction], project, env)


def record_claude(bin_dir: Path, home: Path, project: Path, url: str) -> None:
    env = clean_env(home, claude_environment(url))
    claude = [str(bin_dir / "claude"), "-p"]
    for request, correction in CLAUDE_SESSIONS:
        run([*claude, request], project, env)
        run([*claude, "--continue", correction], project, env)


def copy_out(home: Path, project: Path, out: Path) -> list[Path]:
    """Copy the transcripts to `out` with the temporary paths replaced (see the docstring)."""
    slug = "".join(c if c.isalnum() else "-" for c in str(project))
    pairs = [(str(project), f"{FAKE_HOME}/project"), (str(home), FAKE_HOME)]
    copied = []
    sources = [
        (home / ".claude" / "projects", out / "claude-code"),
        (home / ".codex" / "sessions", out / "codex"),
    ]
    for root, dest in sources:
        for f in sorted(root.rglob("*.jsonl")):
            rel = Path(str(f.relative_to(root)).replace(slug, "-home-user-project"))
            text = f.read_text(encoding="utf-8")
            for old, new in pairs:
                text = text.replace(old, new)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            copied.append(target)
    return copied


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/sessions"))
    ap.add_argument("--prefix", type=Path, help="npm prefix (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="moscopt-record-") as tmp:
        prefix = args.prefix or Path(tmp) / "npm"
        bin_dir = install(prefix)
        home = Path(tmp) / "home"
        project = home / "project"
        project.mkdir(parents=True)
        with AgentAPIServer(reply) as server:
            record_codex(bin_dir, home, project, server.url)
            record_claude(bin_dir, home, project, server.url)
            print(f"loopback server answered {len(server.requests)} request(s)")
        for sub in ("claude-code", "codex"):
            shutil.rmtree(args.out / sub, ignore_errors=True)
        copied = copy_out(home, project, args.out)
        versions = (
            f"codex: {cli_version(bin_dir / 'codex')}\nclaude: {cli_version(bin_dir / 'claude')}\n"
        )
    (args.out / "VERSIONS.txt").write_text(versions)
    print(versions + "\n".join(str(p) for p in copied))


if __name__ == "__main__":
    main()
