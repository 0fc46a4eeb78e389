"""Exact match after normalization, and numeric comparison (GSM8K, the offline benchmark)."""

from __future__ import annotations

import re
from fractions import Fraction

from moscopt.benchmarks.extract import (
    extract_answer,
    extract_number,
    last_number,
    normalize_number_text,
)
from moscopt.benchmarks.tasks import Grade, Task

_NUM_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?$")


def to_number(text: str) -> Fraction | None:
    """`text` as an exact number ("1,000", "$18.00", "-3/4", "50%"), or None."""
    s = normalize_number_text(text.strip()).rstrip(".")
    percent = s.endswith("%")
    s = s.rstrip("%")
    if not _NUM_RE.match(s):
        return None
    try:
        value = Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return value / 100 if percent else value


def gold_answer_text(gold: object) -> str:
    """The gold answer; a GSM8K-style solution keeps only what follows `####`."""
    text = str(gold)
    if "####" in text:
        text = text.rsplit("####", 1)[1]
    return text.strip()


def normalize_text(text: str) -> str:
    """Lowercase, no markdown emphasis/quotes/trailing period, single spaces, "(b)" -> "b"."""
    s = text.strip().lower()
    s = re.sub(r"\\text\{([^{}]*)\}", r"\1", s)
    previous = None
    while s != previous:  # "**yes**." -> "yes"
        previous = s
        s = s.strip("*_`\"' \t").rstrip(".")
    s = re.sub(r"\s+", " ", s)
    m = re.fullmatch(r"\(?([a-z])\)", s) or re.fullmatch(r"\(([a-z])\)?", s)
    return m.group(1) if m else s


def grade_numeric(task: Task, response: str) -> Grade:
    gold = to_number(gold_answer_text(task.gold))
    if gold is None:
        raise ValueError(f"gold answer of {task.id} is not a number")
    pred_text = extract_number(response)
    if pred_text is None:
        return Grade(0.0, None, "no number found")
    pred = to_number(pred_text)
    ok = pred is not None and pred == gold
    return Grade(1.0 if ok else 0.0, pred_text, "correct" if ok else "wrong number")


def grade_exact(task: Task, response: str) -> Grade:
    """Exact match after normalization; numbers compare by value, not spelling."""
    gold = gold_answer_text(task.gold)
    answer = extract_answer(response)
    if answer is None and to_number(gold) is not None:
        answer = last_number(response)  # no marker: a numeric answer is the last number written
    if answer is None:
        lines = [ln for ln in response.strip().split("\n") if ln.strip()]
        if not lines:
            return Grade(0.0, None, "empty response")
        answer = lines[-1].strip()
    ok = answers_match(gold, answer)
    return Grade(1.0 if ok else 0.0, answer, "correct" if ok else "mismatch")


def answers_match(gold: str, answer: str) -> bool:
    g, a = to_number(gold), to_number(answer)
    if g is not None and a is not None:
        return g == a
    ng, na = normalize_text(gold), normalize_text(answer)
    return ng == na or re.sub(r"\s+", "", ng) == re.sub(r"\s+", "", na)
