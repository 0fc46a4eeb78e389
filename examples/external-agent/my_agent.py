"""A minimal agent of your own, to show what moscopt's external-agent harness expects.

moscopt runs it once per task in a fresh folder and writes the skills the gate chose there, in
`.agents/skills/<name>/SKILL.md` (and `.claude/skills/...`). The agent reads the task on stdin,
puts its skills in the system prompt, asks an OpenAI-compatible chat endpoint, and prints the
answer on stdout (what moscopt grades). Anything on stderr becomes part of the trajectory
that moscopt's optimizer reflects on. Standard library only.

Environment: MY_AGENT_MODEL (default gpt-4.1-mini), MY_AGENT_API_BASE (default
https://api.openai.com/v1), OPENAI_API_KEY.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path


def read_skills(folder: Path) -> list[tuple[str, str, str]]:
    """(name, description, body) of every skill in `folder`."""
    skills = []
    for file in sorted(folder.glob("*/SKILL.md")):
        text = file.read_text(encoding="utf-8")
        _, front, body = text.split("---\n", 2)
        description = next(
            (line.split(":", 1)[1].strip() for line in front.splitlines()
             if line.startswith("description:")), "",
        )  # fmt: skip
        skills.append((file.parent.name, description, body.strip()))
    return skills


def main() -> int:
    task = sys.stdin.read()
    skills = read_skills(Path(".agents/skills"))
    print(f"skills: {', '.join(n for n, _, _ in skills) or 'none'}", file=sys.stderr)
    system = "\n\n".join(f"## Skill: {name}\n\n{body}" for name, _, body in skills)
    messages = [{"role": "user", "content": task}]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    base = os.environ.get("MY_AGENT_API_BASE", "https://api.openai.com/v1").rstrip("/")
    request = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(
            {"model": os.environ.get("MY_AGENT_MODEL", "gpt-4.1-mini"), "messages": messages}
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",
        },
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        reply = json.load(response)["choices"][0]["message"]["content"]
    print(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
