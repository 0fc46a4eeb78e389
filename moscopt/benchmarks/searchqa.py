"""SearchQA as the MRQA 2019 release on the hub (`lucadiliello/searchqa`): each row's
`context` is its own search results, "[DOC] [TLE] title [PAR] snippet [DOC] [TLE] ...".

`documents` turns a row into the fields the spec reads: `search_corpus` (one document per
`[DOC]`, for the agent's offline `search` tool), `answer` (the first gold alias) and `answers`
(every alias). `grade_searchqa` accepts any alias after normalization.
"""

from __future__ import annotations

import re
from typing import Any

from moscopt.benchmarks.extract import extract_answer
from moscopt.benchmarks.graders.exact import answers_match
from moscopt.benchmarks.tasks import Grade, Task

_DOC = re.compile(r"\[DOC\]")
_TLE = "[TLE]"
_PAR = "[PAR]"


def split_context(context: str) -> list[dict[str, str]]:
    """One `{"title", "text"}` per `[DOC]` block (empty blocks dropped)."""
    out = []
    for block in _DOC.split(context):
        block = block.strip()
        if not block:
            continue
        title, text = "", block
        if block.startswith(_TLE):
            head, sep, rest = block[len(_TLE) :].partition(_PAR)
            title, text = (head.strip(), rest) if sep else ("", head)
        text = " ".join(text.replace(_PAR, " ").split())
        if text or title:
            out.append({"title": title, "text": text})
    return out


def documents(row: dict[str, Any]) -> dict[str, Any]:
    context, answers = row["context"], row["answers"]
    if not isinstance(context, str):
        raise TypeError("context must be text")
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise ValueError("answers must be a non-empty list of strings")
    docs = split_context(context)
    if not docs:
        raise ValueError("context holds no [DOC] search result")
    return {**row, "search_corpus": docs, "answer": answers[0], "answers": list(answers)}


def grade_searchqa(task: Task, response: str) -> Grade:
    answer = extract_answer(response)
    if answer is None:
        lines = [ln.strip() for ln in response.strip().split("\n") if ln.strip()]
        if not lines:
            return Grade(0.0, None, "empty response")
        answer = lines[-1]
    aliases = task.meta.get("answers") or [str(task.gold)]
    ok = any(answers_match(str(alias), answer) for alias in aliases)
    return Grade(1.0 if ok else 0.0, answer, "correct" if ok else "mismatch")
