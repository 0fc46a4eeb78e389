"""Typed errors of the LLM layer, and what the caller does with each.

    LMError                      base; never raised itself
      LMFatalError (RunFailed)   the run cannot go on: save state, stop, exit 1
        LMAuthError              401/403 or a missing key
        LMNotFoundError          404 / model not found
        LMUnavailableError       retries exhausted (429/5xx/timeouts/dropped connections/garbage)
        BudgetExceeded           --max-calls / --max-cost would be exceeded; no call was made
      LMRequestError             this request was refused (400: context too long, bad params, an
                                 empty choice list): not retried; the caller scores it as failed
      LMOutputError              a structured call's output did not parse or match its schema;
                                 carries the `Completion`; the caller decides (resample, fallback)
    LMSetupError (UserError)     bad model name, missing optional package: exit 2, one message

Messages never contain API keys or auth headers (see `moscopt.lm.redact`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from moscopt.errors import MoscoptError, RunFailed, UserError

if TYPE_CHECKING:
    from moscopt.lm.base import Completion


class LMError(MoscoptError):
    """Base class of the LLM layer's errors."""


class LMFatalError(LMError, RunFailed):
    """The run cannot continue; the trainer saves state and exits with code 1."""

    exit_code = 1


class LMAuthError(LMFatalError):
    """The provider refused our credentials (401/403), or no key was found."""


class LMNotFoundError(LMFatalError):
    """The provider does not know the model or the endpoint (404)."""


class LMUnavailableError(LMFatalError):
    """Transient failures persisted past `max_retries` attempts."""


class BudgetExceeded(LMFatalError):
    """Making the next call would exceed `max_calls` or `max_cost`; it was not made."""


class LMRequestError(LMError):
    """The provider refused or could not answer this one request; retrying will not help."""


class LMOutputError(LMError):
    """A structured call returned text that is not valid JSON for its schema."""

    def __init__(self, message: str, completion: Completion) -> None:
        super().__init__(message)
        self.completion = completion

    @property
    def text(self) -> str:
        return self.completion.text


class LMSetupError(UserError):
    """The LLM layer cannot be set up as configured (bad model name, missing package)."""


_E = TypeVar("_E", bound=BaseException)


def cause_of(error: BaseException, kind: type[_E], *, context: bool = True) -> _E | None:
    """The first exception of `kind` in `error`'s chain (itself, then its `__cause__`, and with
    `context` its `__context__` where it has no cause): what a library wrapped, found again."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, kind):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or (cause.__context__ if context else None)
    return None
