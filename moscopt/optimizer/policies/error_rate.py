"""The error-rate policy: a run whose LLM calls mostly fail stops, loudly, instead of finishing.

Every call's outcome is counted under the step it belongs to: (epoch, phase, step), as the
engine's `Context.where` names it. The run stops with `ErrorRateExceeded` when, for a step,
more than `max_rate` of its calls failed:

- while the step runs, as soon as that is true of the calls it has *started* (so calls still in
  flight count as successes) and at least `EARLY_FAILURES` failed: a failing validation stops
  before its score is saved;
- after each skill-editing minibatch's rollouts (an engine `Observer`), before their credit is
  saved, and when the step has ended (at the first call of a later step, before it is made),
  if it made at least `MIN_CALLS` calls.

`ErrorRateExceeded` is an `LMFatalError`: the engine's last save stands, the command line prints
the one-line reason (quoting the provider's last message, redacted) and exits 1, and `moscopt
train --resume` continues from there. `llm.max_error_rate: 1.0` never stops a run.

A failed call is one the provider refused (`LMRequestError`: HTTP 400, an empty answer...).
Fatal errors (bad key, retries exhausted, budget) stop the run by themselves, and output that
does not parse (`LMOutputError`) is the model's answer, not a failure of the call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moscopt.lm.base import LM, Completion, Message
from moscopt.lm.errors import LMFatalError, LMRequestError
from moscopt.lm.redact import redact, scrub_secrets
from moscopt.optimizer.engine.extension import Extension

if TYPE_CHECKING:
    from moscopt.agent.harness import Rollout
    from moscopt.optimizer.engine.context import Context

StepKey = tuple[int, str, int]  # (epoch, phase, step)
MIN_CALLS = 2  # a step whose only call failed is not judged on it alone
EARLY_FAILURES = 5  # failures before a step still running is judged
MESSAGE_CHARS = 300


class ErrorRateExceeded(LMFatalError):
    """More than `llm.max_error_rate` of a step's LLM calls failed: the run stops (resumable)."""


@dataclass
class StepCalls:
    started: int = 0
    calls: int = 0  # finished
    failed: int = 0
    last_error: str | None = None


class ErrorRate:
    """Counts of calls and failures per step, and the verdict (sticky once given). Thread-safe."""

    def __init__(self, max_rate: float) -> None:
        self.max_rate = max_rate
        self.steps: dict[StepKey, StepCalls] = {}
        self.verdict: str | None = None
        self._lock = threading.Lock()

    def start(self, step: StepKey) -> None:
        """Before a call of `step`: judge the steps that have ended, then count it as started."""
        self.check(step)
        with self._lock:
            self.steps.setdefault(step, StepCalls()).started += 1

    def finish(self, step: StepKey, *, ok: bool, error: str | None = None) -> None:
        """After a call of `step`; a failure may stop the run at once (see the module)."""
        with self._lock:
            counts = self.steps.setdefault(step, StepCalls())
            counts.calls += 1
            if ok:
                return
            counts.failed += 1
            counts.last_error = error
            if counts.failed >= EARLY_FAILURES and self._over(counts.failed, counts.started):
                self.verdict = self.verdict or self.reason(step, counts, counts.started)
        self.check(step)

    def check(self, current: StepKey, *, include_current: bool = False) -> None:
        """Raise `ErrorRateExceeded` if a verdict was given, or for a step over the rate: every
        step other than `current` (they have ended; each is judged once), and `current` too if
        asked."""
        with self._lock:
            ended = [k for k in self.steps if k != current]
            judged = [*ended, current] if include_current and current in self.steps else ended
            for key in judged:
                c = self.steps[key]
                if self.verdict is None and c.calls >= MIN_CALLS and self._over(c.failed, c.calls):
                    self.verdict = self.reason(key, c, c.calls)
            for key in ended:
                del self.steps[key]
            verdict = self.verdict
        if verdict is not None:
            raise ErrorRateExceeded(verdict)

    def _over(self, failed: int, calls: int) -> bool:
        return failed > self.max_rate * calls

    def reason(self, step: StepKey, counts: StepCalls, calls: int) -> str:
        epoch, phase, number = step
        message = " ".join(scrub_secrets(redact(counts.last_error or "")).split())
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 3] + "..."
        return (
            f"{counts.failed} of the {calls} LLM calls of step {number} ({phase} phase, epoch "
            f"{epoch + 1}) failed, more than llm.max_error_rate = {self.max_rate:g}; last "
            f"error: {message or 'unknown'}"
        )


class GuardedLM:
    """An `LM` that reports each call to `policy` under the step `where()` names (which may
    raise `ErrorRateExceeded` before or after it). Anything else is the wrapped LM's."""

    def __init__(self, lm: LM, policy: ErrorRate, where: Callable[[], Mapping[str, Any]]) -> None:
        self.lm = lm
        self.policy = policy
        self.where = where

    @property
    def model(self) -> str:
        return self.lm.model

    def __getattr__(self, name: str) -> Any:  # stats, cache, events, close, request, ...
        return getattr(self.lm, name)

    def _step(self) -> StepKey:
        w = self.where()
        return (int(w.get("epoch", 0)), str(w.get("phase", "")), int(w.get("step", 0)))

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count the call made in the block under the current step."""
        step = self._step()
        self.policy.start(step)
        try:
            yield
        except LMRequestError as e:
            self.policy.finish(step, ok=False, error=str(e))
            raise
        except LMFatalError:
            raise
        except Exception:  # LMOutputError: the provider answered
            self.policy.finish(step, ok=True)
            raise
        self.policy.finish(step, ok=True)

    def complete(self, messages: Sequence[Message], **options: Any) -> Completion:
        with self._counted():
            return self.lm.complete(messages, **options)

    async def acomplete(self, messages: Sequence[Message], **options: Any) -> Completion:
        with self._counted():
            return await self.lm.acomplete(messages, **options)


class MinibatchCheck(Extension):
    """The engine extension that judges the current step once its rollouts are in."""

    def __init__(self, policy: ErrorRate) -> None:
        self.policy = policy

    async def after_rollouts(self, ctx: Context, rollouts: Sequence[Rollout]) -> None:
        w = ctx.where()
        self.policy.check((w["epoch"], w["phase"], w["step"]), include_current=True)


def watch_error_rate(ctx: Context) -> ErrorRate:
    """Count the calls of `ctx`'s LMs (one wrapper when the agent's and the optimizer's are one
    LM) and judge the steps as the module docstring says. Called once, by `Context`."""
    policy = ErrorRate(ctx.config.llm.max_error_rate)
    agent = GuardedLM(ctx.agent_lm, policy, ctx.where)
    same = ctx.optimizer_lm is ctx.agent_lm
    ctx.agent_lm = agent
    ctx.optimizer_lm = agent if same else GuardedLM(ctx.optimizer_lm, policy, ctx.where)
    ctx.attach(MinibatchCheck(policy))
    return policy
