"""What a failed attempt means, and how long to wait before the next one.

Transports turn every failure into a `Fault` with a `kind`:

- `transient` (429, 408, 5xx, timeout, dropped or refused connection, unparseable body):
  retried with exponential backoff and full jitter, honouring `Retry-After`;
- `auth` (401/403, missing key) and `not_found` (404, unknown model): fail fast;
- `request` (other 4xx such as a too-long prompt, an empty choice list): not retried.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Literal

from moscopt.lm.errors import (
    LMAuthError,
    LMError,
    LMNotFoundError,
    LMRequestError,
    LMUnavailableError,
)

FaultKind = Literal["transient", "auth", "not_found", "request"]
RETRY_AFTER_CAP = 120.0  # never sleep longer than this on a server's say-so


@dataclass(eq=False)
class Fault(Exception):
    """One failed attempt, classified. `message` is already redacted."""

    kind: FaultKind
    message: str
    status: int | None = None
    retry_after: float | None = None

    def __str__(self) -> str:
        return self.message


def fault_for_status(status: int, message: str, retry_after: float | None = None) -> Fault:
    if status in (401, 403):
        return Fault("auth", message, status)
    if status == 404:
        return Fault("not_found", message, status)
    if status in (408, 409, 425, 429) or status >= 500:
        return Fault("transient", message, status, retry_after)
    return Fault("request", message, status)


def parse_retry_after(value: object) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent or bad.

    Whatever a server sends cannot crash a call: a value that cannot be read (a date without a
    zone or with `-0000`, a year past 9999, a number too large, not text at all) is None, and the
    call backs off as usual."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return 0.0 if math.isnan(seconds) else max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:  # `-0000` (RFC 5322: UTC, source unknown) parses naive
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


@dataclass
class RetryPolicy:
    """Bounded attempts with exponential backoff and full jitter."""

    max_retries: int = 6
    base: float = 0.5
    cap: float = 30.0

    def delay(self, retry: int, fault: Fault, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        backoff = min(self.cap, self.base * 2 ** (retry - 1)) * rng.uniform(0.5, 1.0)
        if fault.retry_after is not None:
            return min(RETRY_AFTER_CAP, max(fault.retry_after, 0.0))
        return backoff


def final_error(fault: Fault, model: str, attempts: int) -> LMError:
    """The typed error for a fault that ends a call."""
    where = f"model '{model}'"
    if fault.kind == "auth":
        return LMAuthError(
            f"{where}: the provider refused the credentials ({fault.message}); check the API key "
            "environment variable for this provider"
        )
    if fault.kind == "not_found":
        return LMNotFoundError(
            f"{where}: not found ({fault.message}); check --model and --api-base"
        )
    if fault.kind == "request":
        return LMRequestError(f"{where}: request refused ({fault.message})")
    return LMUnavailableError(
        f"{where}: gave up after {attempts} attempt(s); last error: {fault.message}"
    )
