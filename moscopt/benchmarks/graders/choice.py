"""Multiple choice: the letter the response settles on must equal the gold letter."""

from __future__ import annotations

from moscopt.benchmarks.extract import extract_choice
from moscopt.benchmarks.tasks import Grade, GradeFn, Task


def make_choice_grader(letters: str) -> GradeFn:
    def grade_choice(task: Task, response: str) -> Grade:
        letter = extract_choice(response, letters)
        if letter is None:
            return Grade(0.0, None, "no choice letter found")
        ok = letter == str(task.gold).strip().upper()
        return Grade(1.0 if ok else 0.0, letter, "correct" if ok else "wrong letter")

    return grade_choice
