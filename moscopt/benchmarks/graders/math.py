"""Math answers compared with math-verify (`verify(parse(gold), parse(pred))`).

math-verify bounds its own time with SIGALRM, which only works in the main thread; elsewhere
(a thread pool of graders) its timeouts are disabled and a watchdog thread bounds the wait
instead. Long answers are refused before parsing, since sympy time grows with their size.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from moscopt.benchmarks.extract import extract_answer
from moscopt.benchmarks.tasks import Grade, Task

MAX_ANSWER_CHARS = 400
TIMEOUT_SECONDS = 5

T = TypeVar("T")


INSTALL_HINT = "pip install 'moscopt[math]'"


def require_math_verify() -> None:
    """A `UserError` with the install hint when math-verify cannot be imported (a bare install).

    Checked before a benchmark graded by math-verify reads its data: without it every answer
    not equal to the gold character for character would be an error, not a grade."""
    import importlib.util

    try:
        found = importlib.util.find_spec("math_verify") is not None
    except (ImportError, ValueError):  # a broken or half-removed package
        found = False
    if not found:
        from moscopt.errors import UserError

        raise UserError(f"grading math needs math-verify, which is not installed: {INSTALL_HINT}")


def grade_math(task: Task, response: str) -> Grade:
    answer = extract_answer(response)
    if answer is None:
        return Grade(0.0, None, "no \\boxed{} or FINAL ANSWER found")
    if len(answer) > MAX_ANSWER_CHARS:
        return Grade(0.0, answer[:MAX_ANSWER_CHARS], "answer too long to compare")
    ok = math_equal(str(task.gold), answer)
    return Grade(1.0 if ok else 0.0, answer, "equivalent" if ok else "not equivalent")


def math_equal(gold: str, answer: str) -> bool:
    """Whether `answer` is mathematically equivalent to `gold` (both LaTeX-ish strings)."""
    if _plain(gold) == _plain(answer):
        return True
    if threading.current_thread() is threading.main_thread():
        return _verify(gold, answer, TIMEOUT_SECONDS)
    return _with_deadline(lambda: _verify(gold, answer, None), 2 * TIMEOUT_SECONDS)


def _plain(s: str) -> str:
    return "".join(s.split())


class _DropTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeout is off; moscopt bounds the time itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


def _quiet_timeout_warning() -> None:
    for name in ("math_verify.grader", "math_verify.parser"):
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropTimeoutWarning) for f in log.filters):
            log.addFilter(_DropTimeoutWarning())


def _verify(gold: str, answer: str, timeout: int | None) -> bool:
    from math_verify import parse, verify

    if timeout is None:
        _quiet_timeout_warning()

    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout)
    pred_parsed = parse(f"${answer}$", parsing_timeout=timeout)
    if not pred_parsed:
        pred_parsed = parse(answer, parsing_timeout=timeout)
    if not gold_parsed or not pred_parsed:
        return False
    # Order matters: the gold first (math-verify treats its two arguments asymmetrically).
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout))


def _with_deadline(fn: Callable[[], T], seconds: float) -> T:
    """Run `fn` in a daemon thread; past `seconds`, give up (the thread is left to finish)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:
            box["error"] = e

    worker = threading.Thread(target=run, name="math-verify", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"math-verify took longer than {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
