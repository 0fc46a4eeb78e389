"""The study tests' world: the scripted addition project behind the loopback server.

`moscopt.testing.scripted` answers every call of a training run from the skills in context
(the agent succeeds iff a skill holds the magic rule); this adds the two prompts a study makes
besides: the distilled export's (one skill merging the given ones, rule kept) and GEPA's
reflection (the instruction it was shown plus a new generic line: never the rule, so GEPA
keeps proposing, and spending, until its budget is gone).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from moscopt.testing.scripted import MAGIC, server_responder, write_project

GEPA_OPENING = "I provided an assistant with the following instructions"
DISTILL_OPENING = "into ONE skill"
CONFIG = "evolution:\n  embedding_model: difflib\noptimizer:\n  minibatch: 2\n"


def responder(body: dict[str, Any]) -> str:
    last = str(body["messages"][-1]["content"])
    if GEPA_OPENING in last:  # a new wording that never holds the rule: GEPA spends it all
        shown = re.search(r"```\n?(.*?)```", last, re.DOTALL)
        current = shown.group(1).strip() if shown else ""
        note = hashlib.sha256(last.encode()).hexdigest()[:8]
        return f"```\n{current}\n\n- Take care ({note}).\n```"
    if DISTILL_OPENING in last:
        body_text = "# Distilled\n\n1. Plan.\n2. Compute.\n" + (
            f"3. {MAGIC}\n" if MAGIC in last else ""
        )
        return json.dumps(
            {"name": "distilled", "description": "All skills in one.", "body": body_text}
        )
    return server_responder(body)


def project(root: Path, seed_dir: Path) -> Path:
    """The scripted addition project, with 4 training, 6 validation and 2 test tasks (6: the
    fewest on which an edit can show itself better, issue 37)."""
    write_project(root, seed_dir, CONFIG)
    spec = root / "addition.yaml"
    spec.write_text(
        spec.read_text().replace("{train: 6, val: 6, test: 2", "{train: 4, val: 6, test: 2")
    )
    return root


def common(url: str) -> list[str]:
    """Flags of a small, deterministic study: one epoch of two steps, one call at a time."""
    return [
        "--benchmark", "addition.yaml", "--data", "addition.jsonl", "--model", "openai/scripted",
        "--api-base", url, "--n", "3", "--k", "2", "--epochs", "1", "--steps-per-epoch", "2",
        "--concurrency", "1",
    ]  # fmt: skip
