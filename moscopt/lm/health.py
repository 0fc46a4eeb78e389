"""Which deployments are down: the failures and answers the Router reports, as events.

litellm's Router absorbs a failing deployment (it retries the call on another one and rests the
failing one for `routing.cooldown` seconds once it failed more than `routing.allowed_fails`
times), so a run survives it, but nothing said so. `DeploymentHealth` counts each deployment's
failures in a row: the one past `allowed_fails` marks it down (the Router rests it then), its
next answer marks it up again. Each change is one record for the client's event sink, which the
ledger writes as a `deployment` event (`moscopt status` and the live display show it):

    {"type": "deployment", "deployment": "d1", "state": "down", "failures": 4, "error": "..."}
    {"type": "deployment", "deployment": "d1", "state": "up", "down_for": 31.2}
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

Report = Callable[[dict[str, Any]], None]


class DeploymentHealth:
    """Failures in a row per deployment, and the ones that are down (thread-safe)."""

    def __init__(
        self,
        allowed_fails: int,
        report: Report | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold = allowed_fails + 1  # the Router rests a deployment past allowed_fails
        self.report = report
        self._clock = clock
        self._lock = threading.Lock()
        self._fails: dict[str, int] = {}
        self._down: dict[str, float] = {}  # deployment -> when it went down

    @property
    def down(self) -> list[str]:
        with self._lock:
            return sorted(self._down)

    def failed(self, deployment: str, error: str) -> None:
        with self._lock:
            fails = self._fails[deployment] = self._fails.get(deployment, 0) + 1
            if deployment in self._down or fails < self.threshold:
                return
            self._down[deployment] = self._clock()
        self._send({"deployment": deployment, "state": "down", "failures": fails, "error": error})

    def answered(self, deployment: str) -> None:
        with self._lock:
            self._fails[deployment] = 0
            since = self._down.pop(deployment, None)
            if since is None:
                return
            down_for = round(self._clock() - since, 3)
        self._send({"deployment": deployment, "state": "up", "down_for": down_for})

    def _send(self, record: dict[str, Any]) -> None:
        if self.report is not None:
            self.report({"type": "deployment", **record})
