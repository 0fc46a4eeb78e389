"""Humanity's Last Exam, text-only subset: the row filter and the grader by `answer_type`.

A row with an image (a non-empty `image` column, a base64 data URI on the hub) is left out.
An `exactMatch` answer is correct when it matches the gold after normalization or is
mathematically equivalent to it (math-verify); a `multipleChoice` answer is the letter the
response settles on (the options are listed in the question, "Answer Choices: A. ...").
"""

from __future__ import annotations

import string
from typing import Any

from moscopt.benchmarks.extract import extract_answer, extract_choice
from moscopt.benchmarks.graders.exact import answers_match
from moscopt.benchmarks.graders.math import MAX_ANSWER_CHARS, math_equal
from moscopt.benchmarks.tasks import Grade, Task

ANSWER_TYPES = ("exactMatch", "multipleChoice")


def text_only(row: dict[str, Any]) -> dict[str, Any] | None:
    """The row unchanged, or None when it comes with an image."""
    if "image" not in row:
        raise KeyError("image")
    if row["image"]:
        return None
    if row.get("answer_type") not in ANSWER_TYPES:
        raise ValueError(f"answer_type must be one of {', '.join(ANSWER_TYPES)}")
    return row


def grade_hle(task: Task, response: str) -> Grade:
    gold = str(task.gold).strip()
    if task.meta.get("answer_type") == "multipleChoice":
        letter = extract_choice(response, string.ascii_uppercase)
        if letter is None:
            return Grade(0.0, None, "no choice letter found")
        ok = letter == gold.upper()
        return Grade(1.0 if ok else 0.0, letter, "correct" if ok else "wrong letter")
    answer = extract_answer(response)
    if answer is None:
        return Grade(0.0, None, "no \\boxed{} or FINAL ANSWER found")
    if answers_match(gold, answer):
        return Grade(1.0, answer, "exact match")
    if len(answer) > MAX_ANSWER_CHARS:
        return Grade(0.0, answer[:MAX_ANSWER_CHARS], "answer too long to compare")
    ok = math_equal(gold, answer)
    return Grade(1.0 if ok else 0.0, answer, "equivalent" if ok else "mismatch")
