"""A world for tasks that carry their own judges: the agent does what its skills say.

The agent's reply to a support ticket is a greeting, then every requirement its skills state as
a line `Always include: TEXT` (TEXT copied on a line of its own, in the order the skills give
them). The tasks (`write_task_files`) are judged by rule checks — a `## Next steps` heading and
the sign-off `-- The Acme Team` — or, as rubrics, by criteria that quote those texts. The seed
skill (`SEED_SKILL`) carries the first requirement and not the second: a deficient skill, half
the checks met. The optimizer's side (`ROUTES`, by purpose) proposes, for a skill whose failed
trajectories show an unmet check (`must contain "X"`, as moscopt renders a check to reflection),
the line `Always include: X` (likewise for a rubric criterion that quotes X), and for any other
skill an edit that changes nothing the agent
does. The rubric judge (`judge_route`) marks a criterion met when the text it quotes is in the
answer; `position_bias` makes it also mark met whichever criterion it is shown first, as a
judge that leans on the first item does.

Everything depends on the skills' text and on the judge's rendering of checks and criteria,
never on the wording of moscopt's prompts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moscopt.lm.base import LMRequest

SIGN_OFF = "-- The Acme Team"
NEXT_STEPS = "## Next steps"
HELD_OUT_MARK = "held-out-only requirement 7f3a"  # appears in held-out judges, nowhere else
_REQUIREMENT = re.compile(r"^\s*(?:[-*]\s*)?Always include:\s*(.+?)\s*$", re.MULTILINE)
_UNMET = re.compile(r"not met: (.+)$", re.MULTILINE)

SEED_SKILL = f"""---
name: support-replies
description: Answer customer support tickets for Acme.
---

# Support replies

Be kind and brief.
Always include: {NEXT_STEPS}
"""
OTHER_SKILL = """---
name: general-writing
description: Write clearly.
---

# General writing

Use short sentences.
"""
GATE = """---
name: gate
description: Routes tasks.
---

Pick the skills that fit the task.
"""

TICKETS = (
    "My order {i} arrived late.",
    "I was charged twice for invoice {i}.",
    "The app crashes when I open report {i}.",
    "How do I reset the password of account {i}?",
    "Can I change the delivery address of order {i}?",
    "The discount code {i} does not work.",
)


def rule_judge(*, held_out: bool = False) -> dict[str, Any]:
    checks: list[dict[str, Any]] = [
        {"op": "section_present", "arg": "Next steps"},
        {"op": "contains", "arg": SIGN_OFF},
    ]
    if held_out:  # met by every reply; its description must never reach a prompt
        checks.append({"op": "max_chars", "arg": 5000, "description": HELD_OUT_MARK})
    return {"kind": "rule", "checks": checks}


def rubric_judge(*, held_out: bool = False) -> dict[str, Any]:
    criteria: list[Any] = [
        f'Has a heading "{NEXT_STEPS}"',
        f'Signs off with "{SIGN_OFF}"',
    ]
    if held_out:
        criteria.append(f'Mentions "Dear" ({HELD_OUT_MARK})')
    return {"kind": "rubric", "criteria": criteria}


def task_rows(n: int, prefix: str, judge: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "task_id": f"{prefix}-{i}",
            "task": "Reply to this support ticket: " + TICKETS[i % len(TICKETS)].format(i=i),
            "judge": judge,
        }
        for i in range(n)
    ]


def write_task_files(
    folder: Path, *, kind: str = "rule", n: int = 27, held_out: int = 16
) -> tuple[Path, Path]:
    """`tasks.jsonl` (train and val) and `held-out.jsonl` in `folder`, judged by rule checks
    (`kind="rule"`) or rubrics."""
    make = rule_judge if kind == "rule" else rubric_judge
    folder.mkdir(parents=True, exist_ok=True)
    train = folder / "tasks.jsonl"
    held = folder / "held-out.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in task_rows(n, "t", make())))
    rows = task_rows(held_out, "h", make(held_out=True))
    held.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return train, held


def write_skills(folder: Path) -> None:
    for name, text in (
        ("support-replies", SEED_SKILL),
        ("general-writing", OTHER_SKILL),
        ("gate", GATE),
    ):
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "SKILL.md").write_text(text)


def agent_reply(system: str, task: str) -> str:
    first = task.splitlines()[0] if task else ""
    lines = [f"Hello, thanks for writing. About: {first}", "We are on it."]
    lines += _REQUIREMENT.findall(system)
    return "\n".join(lines)


def _agent(request: LMRequest) -> str:
    msgs = request.messages
    system = "\n".join(m["content"] for m in msgs if m["role"] == "system")
    users = [m["content"] for m in msgs if m["role"] == "user"]
    return agent_reply(system, users[-1] if users else "")


def _reflect(request: LMRequest) -> str:
    """The texts that unmet checks or criteria quote (`must contain "X"`, `Signs off with
    "X"`), as reflection reports them."""
    found = _UNMET.findall(request.messages[-1]["content"])
    unmet = sorted({q for line in found for q in re.findall(r'"([^"]+)"', line)})
    if not unmet:
        return "- The replies are fine."
    return "\n".join(f'- Replies are missing "{text}".' for text in unmet)


def _edit(content: str) -> str:
    return json.dumps(
        {"reasoning": "r", "edits": [{"op": "add", "anchor": "", "content": content}]}
    )


def _propose(request: LMRequest) -> str:
    text = request.messages[-1]["content"]
    wanted = re.findall(r'missing "([^"]+)"', text)
    if "name: support-replies" in text and wanted:
        return _edit(f"Always include: {wanted[0]}")
    return _edit("Prefer plain words.")  # changes nothing the agent does: a tie, rejected


def judge_route(*, position_bias: bool = False) -> Callable[[LMRequest], str]:
    """The rubric judge: met where the criterion's quoted text is in the answer (and, with
    `position_bias`, whatever criterion is shown first)."""

    def judge(request: LMRequest) -> str:
        text = request.messages[-1]["content"]
        criteria_part, _, rest = text.partition("## The answer")
        answer = rest.split("## What to write", 1)[0]
        criteria = re.findall(r"^\d+\. (.+)$", criteria_part, re.MULTILINE)
        verdicts = []
        for i, criterion in enumerate(criteria):
            quoted = re.findall(r'"([^"]+)"', criterion)
            met = bool(quoted) and all(q in answer for q in quoted)
            verdicts.append({"why": "checked", "met": met or (position_bias and i == 0)})
        return json.dumps({"verdicts": verdicts})

    return judge


def routes(*, position_bias: bool = False) -> dict[str, Callable[[LMRequest], str]]:
    """The world by the purpose of each call (`FakeLM(routes=...)`)."""
    return {
        "agent": _agent,
        "gate": lambda r: "ACTIVATE: support-replies",
        "reflect-skill": _reflect,
        "reflect-gate": lambda r: "- The gate is fine.",
        "merge": lambda r: r.messages[-1]["content"].split("### Analysis 1\n", 1)[-1],
        "propose-skill": _propose,
        "propose-gate": lambda r: _edit("Prefer support-replies for tickets."),
        "memory": lambda r: "- Adding a missing requirement helped.",
        "budget": lambda r: "L: 3",
        "judge": judge_route(position_bias=position_bias),
    }


def server_responder(*, position_bias: bool = False) -> Callable[[dict[str, Any]], str]:
    """`routes` for `FakeServer`, which sees only the request body: there the purpose is read
    from the body — the structured answer's schema (the judge's verdicts, a proposal's edits),
    else the opening words of moscopt's prompts, as `moscopt.testing.scripted.respond` does."""
    from types import SimpleNamespace

    from moscopt.testing.scripted import purpose_of

    table = routes(position_bias=position_bias)

    def respond(body: dict[str, Any]) -> str:
        request: Any = SimpleNamespace(messages=body["messages"])
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
        wanted = set(schema.get("properties", {}))
        if "verdicts" in wanted:
            return table["judge"](request)
        if "edits" in wanted:
            gate = "name: gate" in body["messages"][-1]["content"]
            return table["propose-gate" if gate else "propose-skill"](request)
        purpose = purpose_of(request)
        return table.get(purpose, table["agent"])(request)

    return respond
