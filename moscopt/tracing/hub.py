"""`Tracing`: the observers of one run, fed on a thread of their own so that none can slow the run
or break it; `traced` opens it for the application layer (nothing at all when none is asked
for); `check_observers` refuses, before a run starts, an observer whose extra is not installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from moscopt.errors import UserError
from moscopt.tracing.base import PROGRESS_EVENTS, Observer, RunEnd, RunInfo, Status

if TYPE_CHECKING:
    from moscopt.config import Config
    from moscopt.run.ledger import BaseEvent

log = logging.getLogger(__name__)

# observer -> (the module its library provides, the extra that installs it)
EXTRAS = {"otel": ("opentelemetry.sdk", "otel"), "mlflow": ("mlflow", "mlflow"),
          "wandb": ("wandb", "wandb")}  # fmt: skip
FINISH_WAIT = 60.0  # seconds a finished run waits for its observers to write what they hold

Progress = Callable[[dict[str, Any]], None]


def check_observers(config: Config) -> None:
    """A `UserError` (exit 2) naming the first observer of `tracing.observers` whose library
    is not installed, with the install command; nothing is imported."""
    for name in config.tracing.observers:
        module, extra = EXTRAS[name]
        if _missing(module):
            raise UserError(
                f"the '{name}' observer needs its extra: pip install 'moscopt[{extra}]'",
                field="tracing.observers",
            )


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


def make_observer(name: str) -> Observer:
    """The observer called `name`; its library is imported here (on the tracing thread)."""
    if name == "otel":
        from moscopt.tracing.otel_spans import OtelObserver

        return OtelObserver()
    if name == "mlflow":
        from moscopt.tracing.run_logging import MlflowObserver

        return MlflowObserver()
    from moscopt.tracing.run_logging import WandbObserver

    return WandbObserver()


class Tracing:
    """Feeds `observers` (names, or made observers) with a run's events on one daemon thread.

    The run's side is `event`, `progress` and `tee` (each puts an item on a queue: no lock, no
    I/O), then `finish`, which waits for the observers to write what they hold (at most
    `wait` seconds). An observer that raises, in any call, is logged once (a warning) and
    dropped; the others go on."""

    def __init__(self, observers: Sequence[str | Observer], run: RunInfo) -> None:
        self._queue: queue.SimpleQueue[tuple[str, Any] | None] = queue.SimpleQueue()
        self._wanted = list(observers)
        self._live: list[Observer] = []
        self.failed: dict[str, str] = {}  # observer -> what it raised (the warning's text)
        self._closed = False
        self._queue.put(("start", run))
        self._thread = threading.Thread(target=self._work, name="moscopt-tracing", daemon=True)
        self._thread.start()

    # -- the run's side --------------------------------------------------------------------------

    def event(self, event: BaseEvent) -> None:
        """A ledger event (the run directory's listener; the LM layer's sink without a run)."""
        if not self._closed:
            self._queue.put(("event", event))

    def lm_record(self, record: dict[str, Any]) -> None:
        """A record of the LM layer's sink (an evaluation: its calls are not in a ledger)."""
        from moscopt.run.ledger import lm_event

        self.event(lm_event(record))

    def progress(self, update: Mapping[str, Any]) -> None:
        if not self._closed and update.get("event") in PROGRESS_EVENTS:
            self._queue.put(("progress", dict(update)))

    def tee(self, progress: Progress | None) -> Progress:
        """`progress` (the display's callback, if any) that also tells the observers."""

        def both(update: dict[str, Any]) -> None:
            self.progress(update)
            if progress is not None:
                progress(update)

        return both

    def finish(self, end: RunEnd, wait: float = FINISH_WAIT) -> None:
        """Tell the observers how the run ended and wait (at most `wait` s) for them."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(("finish", end))
        self._queue.put(None)
        self._thread.join(wait)
        if self._thread.is_alive():
            log.warning("tracing: the observers did not finish within %.0f s", wait)

    # -- the tracing thread ----------------------------------------------------------------------

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            kind, payload = item
            if kind == "start":
                self._start(payload)
                continue
            for observer in list(self._live):
                self._call(observer, kind, payload)

    def _start(self, run: RunInfo) -> None:
        for wanted in self._wanted:
            name = wanted if isinstance(wanted, str) else wanted.name
            try:
                observer = make_observer(wanted) if isinstance(wanted, str) else wanted
            except Exception as e:
                self._fail(name, "start", e)
                continue
            self._live.append(observer)
            self._call(observer, "start", run)

    def _call(self, observer: Observer, kind: str, payload: Any) -> None:
        try:
            getattr(observer, kind)(payload)
        except Exception as e:
            self._live.remove(observer)
            self._fail(observer.name, kind, e)

    def _fail(self, name: str, kind: str, error: Exception) -> None:
        text = f"{type(error).__name__}: {error}"
        self.failed[name] = text
        log.warning(
            "tracing: the %s observer failed (%s) and is off for the rest of the run: %s",
            name,
            kind,
            text,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )


@contextlib.contextmanager
def traced(
    config: Config, info: Callable[[], RunInfo], observers: Sequence[Observer] = ()
) -> Iterator[Tracing | None]:
    """The run's `Tracing` (None when `tracing.observers` is empty and no `observers` are
    given: nothing is built). A run that raises is finished as `stopped` (interrupted, a
    fatal LM error: it can resume) or `failed`, and the exception goes on; a run that returns
    without `finish` is finished as `done`."""
    wanted: list[str | Observer] = [*dict.fromkeys(config.tracing.observers), *observers]
    if not wanted:
        yield None
        return
    tracing = Tracing(wanted, info())
    try:
        yield tracing
    except BaseException as e:
        tracing.finish(RunEnd(status=_status(e), error=type(e).__name__))
        raise
    tracing.finish(RunEnd())


def _status(error: BaseException) -> Status:
    from moscopt.lm.errors import LMFatalError

    if isinstance(error, KeyboardInterrupt | LMFatalError):
        return "stopped"
    return "failed"
