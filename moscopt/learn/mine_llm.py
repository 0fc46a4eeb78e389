"""Mine with a model: the judges of each recurring request written by the optimizer model.

The requests are found and merged as by the deterministic miner (`moscopt.learn.mine`); for
each group the user corrected or re-asked, one structured call (purpose "mine", the schema
`MINE_SCHEMA`) reads the request, the answer it got and what the user said next (all already
scrubbed by the harvest) and returns the rule checks and rubric criteria a good answer must
meet, or `keep: false` when the exchange teaches nothing. Checks with an unknown op or a
malformed argument are dropped; a group whose call fails (invalid output, a refused request)
keeps the deterministic judges. Nothing else is sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moscopt.learn.corrections import Requirement
from moscopt.learn.mine import Exchange, Mined, MinedTask, consistent, exchanges, group, to_task
from moscopt.learn.secrets import limit
from moscopt.learn.sessions import Session
from moscopt.lm.base import LM

STRING_OPS = ("contains", "not_contains", "regex", "section_present", "equals")
INT_OPS = ("max_chars", "min_chars", "max_words", "min_words")
MINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["keep", "checks", "criteria"],
    "properties": {
        "keep": {"type": "boolean"},
        "checks": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["op", "arg", "description"],
                "properties": {
                    "op": {"enum": [*STRING_OPS, *INT_OPS, "json_valid"]},
                    "arg": {"type": ["string", "integer", "null"]},
                    "description": {"type": "string", "maxLength": 200},
                },
            },
        },
        "criteria": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 300}},
    },
}
SYSTEM = (
    "You turn a user's exchanges with a coding/writing agent into an evaluation task. You get "
    "the user's request, the agent's answer and what the user said next (corrections, "
    "re-asks). Write what a good answer to the request must do, as the user's feedback shows: "
    "rule checks where the requirement is literal (ops: contains, not_contains, regex, "
    "section_present, equals with a string arg; max_chars, min_chars, max_words, min_words "
    "with an integer arg; json_valid with a null arg), rubric criteria (short sentences) "
    "otherwise. Only requirements the user stated or clearly implied; keep=false when the "
    "feedback teaches nothing reusable."
)


def _prompt(g: list[Exchange]) -> str:
    shown = [
        {
            "request": limit(ex.request, 1500),
            "answer": limit(ex.answer, 1500),
            "user_said_next": [limit(c, 500) for c in ex.corrections],
            "times_asked_again": ex.reasks,
        }
        for ex in g[:4]
    ]
    return json.dumps({"exchanges": shown}, ensure_ascii=False, indent=1)


def parse(data: Any) -> list[Requirement] | None:
    """The requirements of a model answer (None: `keep` false); bad checks are dropped."""
    if not isinstance(data, dict) or not data.get("keep"):
        return None
    out: list[Requirement] = []
    for c in data.get("checks") or []:
        if not isinstance(c, dict):
            continue
        op, arg, text = c.get("op"), c.get("arg"), str(c.get("description") or "")[:200]
        ok = (
            (op in STRING_OPS and isinstance(arg, str) and arg.strip())
            or (op in INT_OPS and isinstance(arg, int) and not isinstance(arg, bool) and arg > 0)
            or op == "json_valid"
        )
        if op == "regex" and isinstance(arg, str) and ok:
            try:
                re.compile(arg)
            except re.error:
                ok = False
        if ok:
            check = {"op": op, "description": text or str(op)}
            if op != "json_valid":
                check["arg"] = arg
            out.append(Requirement(check=check))
    out.extend(
        Requirement(criterion=c.strip())
        for c in data.get("criteria") or []
        if isinstance(c, str) and c.strip()
    )
    return out


def mine_with_model(
    sessions: list[Session], lm: LM, *, min_occurrences: int = 1
) -> tuple[Mined, int]:
    """Tasks as `moscopt.learn.mine.mine` finds them, their judges written by `lm`; and the
    number of calls made."""
    from moscopt.lm.errors import LMOutputError, LMRequestError

    items = [ex for s in sessions for ex in exchanges(s)]
    tasks: list[MinedTask] = []
    calls = 0
    contradictory = 0
    for g in group(items):
        if not any(ex.corrections or ex.reasks for ex in g):
            continue
        if len(g) + sum(len(ex.corrections) + ex.reasks for ex in g) < min_occurrences:
            continue
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": _prompt(g)},
        ]
        calls += 1
        miner = f"model:{lm.model}"
        try:
            answer = lm.complete(messages, schema=MINE_SCHEMA, purpose="mine")  # type: ignore[arg-type]
            got = parse(answer.data)
        except (LMOutputError, LMRequestError):
            got, miner = [r for ex in g for r in ex.found], "deterministic (model failed)"
        if got is None:
            continue
        found, dropped = consistent(got)
        if not found:
            contradictory += dropped > 0
            continue
        tasks.append(to_task(g, found, dropped, miner))
    tasks.sort(key=lambda t: (-t.meta["occurrences"], t.task_id))
    return Mined(tasks, [], contradictory), calls
