"""The rubric judge: a model scores an answer against a task's criteria, one call per answer.

What the judge model is shown: the criteria and the answer, nothing else — never the task's
skills, never which pool or which run produced the answer, never another answer to compare with.
Each answer is judged on its own (pointwise), so the judge cannot prefer the first or second of
two answers; what remains is the criteria's order, so each answer sees its criteria in an order
drawn from a hash of the answer and the rubric (the same answer always sees the same order, and
its verdicts are cached): a judge that favours early (or late) criteria spreads that lean evenly
over the criteria instead of always favouring the same ones. The call is a structured one at
temperature 0 (purpose `judge`), cached and counted in the budget like every call; its schema
has one verdict per criterion, so a verdict cannot be skipped. A judge whose answer cannot be
used makes the task's grade a grader error (reward 0, the reason recorded), never a crash.
"""

from __future__ import annotations

import hashlib
import random
from typing import TYPE_CHECKING, Any

from moscopt.benchmarks.tasks import Grade
from moscopt.core.prompting import render

if TYPE_CHECKING:
    from moscopt.benchmarks.judges import RubricJudge
    from moscopt.lm.base import LM

JUDGE_TOKENS = 1024
ANSWER_CHARS = 12_000  # of the answer shown to the judge (the rest is cut, and said to be)
WHY_CHARS = 160


def criteria_order(judge: RubricJudge, answer: str) -> list[int]:
    """The order in which `answer` sees the judge's criteria (see the module docstring)."""
    key = "\x00".join([answer, *(c.criterion for c in judge.criteria)])
    order = list(range(len(judge.criteria)))
    random.Random(hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()).shuffle(order)
    return order


def verdict_schema(count: int) -> dict[str, Any]:
    verdict = {
        "type": "object",
        "properties": {
            "why": {"type": "string", "maxLength": WHY_CHARS},
            "met": {"type": "boolean"},
        },
        "required": ["why", "met"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "verdicts": {"type": "array", "items": verdict, "minItems": count, "maxItems": count}
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    }


def judge_messages(judge: RubricJudge, answer: str, order: list[int]) -> list[dict[str, str]]:
    shown = answer if len(answer) <= ANSWER_CHARS else answer[:ANSWER_CHARS] + "\n[... cut]"
    criteria = "\n".join(
        f"{i}. {judge.criteria[j].criterion}" for i, j in enumerate(order, start=1)
    )
    text = render("judge_rubric", criteria=criteria, answer=shown, count=str(len(order)))
    return [{"role": "user", "content": text}]


async def judge_rubric(lm: LM, judge: RubricJudge, answer: str) -> Grade:
    """Score `answer` against `judge`'s criteria with `lm` (see the module docstring)."""
    from moscopt.lm.errors import LMOutputError, LMRequestError

    order = criteria_order(judge, answer)
    try:
        completion = await lm.acomplete(
            judge_messages(judge, answer, order),  # type: ignore[arg-type]
            schema=verdict_schema(len(order)),
            purpose="judge",
            temperature=0.0,
            max_tokens=JUDGE_TOKENS,
        )
    except (LMOutputError, LMRequestError) as e:
        return Grade.failed(f"the rubric judge gave no usable verdict: {e}"[:300])
    verdicts = (
        (completion.data or {}).get("verdicts") if isinstance(completion.data, dict) else None
    )
    if not isinstance(verdicts, list) or len(verdicts) != len(order):
        return Grade.failed("the rubric judge gave no verdict for some criteria")
    met = [False] * len(order)
    for shown_at, criterion in enumerate(order):
        v = verdicts[shown_at]
        met[criterion] = isinstance(v, dict) and v.get("met") is True
    return judge.score(met)
