"""A world for `harvest -> train --tasks -> adopt`: a user who keeps asking for the same fix.

`write_sessions(path, corrections)` writes generic-JSONL sessions (`moscopt harvest --source
jsonl`), each a distinct report request answered with the status before the risks and then
corrected (`corrections[i]`, e.g. "no — always put the risks first"). `responder` plays the
loopback server (`FakeServer(responder=...)`) for training on the mined tasks: the rubric judge
(a criterion is met iff the answer opens with its Risks section), the optimizer (it proposes
`RULE`) and the agent (it puts the risks first iff `RULE` is in its skills), told apart by the
opening words of each prompt, since the server sees no call's purpose.

`agent_model` plays the model behind a real `codex exec` or `claude -p` (the agent a user runs,
driven by the external-agent harness; `python scripts/bench_harvest.py --world --agent PATH`):
each lists the skills of its folder (`.agents/skills`, `.claude/skills`) in its instructions and
names the folder (Codex: `<cwd>`; Claude Code: "Primary working directory:"); this model reads
the skills there, as a real model does with its tools, and puts the risks first iff one of
them holds `RULE`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from moscopt.testing.scripted import edit

RULE = "Always put the ## Risks section first in every report."
WORDS = re.findall(
    r"\w+",
    "billing search payments checkout onboarding mobile ledger identity storage pricing "
    "catalog shipping returns inventory loyalty fraud analytics support email calendar "
    "maps export import backup audit compliance hiring payroll legal security travel "
    "warehouse forecasting marketing partnerships recruiting facilities procurement "
    "translation documentation accessibility localization telemetry caching networking",
)
REQUESTS = [f"Write a report on {w} for quarter q{i}" for i, w in enumerate(WORDS)] + [
    f"Draft the {w} memo r{i}" for i, w in enumerate(WORDS)
]
STATUS_FIRST = "## Status\nOn track.\n\n## Risks\nThe export is slow."
RISKS_FIRST = "## Risks\nThe export is slow.\n\n## Status\nOn track."


def write_sessions(path: Path, corrections: list[str]) -> int:
    """One session per request (as many as `corrections`, at most `len(REQUESTS)`); the count."""
    lines = []
    for i, (request, correction) in enumerate(zip(REQUESTS, corrections, strict=False)):
        messages = [
            {"role": "user", "content": request},
            {"role": "assistant", "content": STATUS_FIRST},
            {"role": "user", "content": correction},
        ]
        lines.append(json.dumps({"id": f"s{i}", "cwd": str(path.parent), "messages": messages}))
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _answer_of(prompt: str) -> str:
    return prompt.split("## The answer", 1)[-1].split("## What to write", 1)[0]


def responder(body: dict[str, Any]) -> str:
    """The loopback server's answer to `body` (see the module docstring)."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if "strict, impartial grader" in last:
        m = re.search(r"exactly (\d+) entries", last)
        met = _answer_of(last).strip().startswith("## Risks")
        return json.dumps({"verdicts": [{"why": "seen", "met": met}] * int(m.group(1) if m else 1)})
    if "## Available skills" in last:
        return "ACTIVATE: careful-computation, detail-verifier"
    if "Propose small, targeted edits that fix the failure" in last:
        return edit("", RULE)
    if "edit budget" in last:
        return "L: 3"
    if "routing rules" in last:
        return edit("", "Prefer careful-computation.")
    if any(w in last for w in ("diagnose what the skill fails", "routing analysis", "memory")):
        return "- The reports put the status before the risks."
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    return RISKS_FIRST if RULE in system else STATUS_FIRST


def agent_model(body: dict[str, Any]) -> str:
    """The answer of the model behind `codex exec` (an OpenAI Responses request) or `claude -p`
    (Anthropic Messages) to `body` (module docstring): from the skills in the folder it names."""
    text = json.dumps(body)
    found = re.search(r"<cwd>([^<]+)</cwd>|Primary working directory: ([^\\\s]+)", text)
    if found is None:
        return STATUS_FIRST
    cwd = Path(json.loads(f'"{found.group(1) or found.group(2)}"'))
    skills = [*cwd.glob(".agents/skills/*/SKILL.md"), *cwd.glob(".claude/skills/*/SKILL.md")]
    return RISKS_FIRST if any(RULE in p.read_text() for p in skills) else STATUS_FIRST
