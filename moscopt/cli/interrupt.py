"""Ctrl-C ends `moscopt train` within about a second, whatever it is doing.

The first Ctrl-C raises `KeyboardInterrupt` as usual, so the run records that it stopped and the
command prints its one line. But Python waits for worker threads before it exits (a model
loading, an embedding, a grader or a local generation running off the event loop), which can
take minutes; so if the process is still alive `GRACE` seconds later, or at a second Ctrl-C, it
prints the same line and exits at once (status 130). Nothing is lost either way: every write of
a run is atomic, a run resumes from its last save, and `moscopt status` shows a run whose process
is gone as interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

GRACE = 0.5  # seconds from Ctrl-C to the hard exit, if the process has not ended by then


class Interrupt:
    """The interrupt line, printed once whichever way the process ends."""

    def __init__(self, message: Callable[[], str]) -> None:
        self.message = message
        self._said = threading.Lock()
        self._done = False

    def announce(self) -> None:
        with self._said:
            if not self._done:
                self._done = True
                print(self.message(), file=sys.stderr, flush=True)

    def hard_exit(self) -> None:
        self.announce()
        os._exit(130)


@contextlib.contextmanager
def prompt_interrupt(message: Callable[[], str], grace: float = GRACE) -> Iterator[Interrupt]:
    """Within the block, Ctrl-C ends the process within `grace` seconds (see the module)."""
    interrupt = Interrupt(message)
    if threading.current_thread() is not threading.main_thread():
        yield interrupt  # signal handlers belong to the main thread
        return
    previous = signal.getsignal(signal.SIGINT)
    fired = threading.Event()

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if fired.is_set():
            interrupt.hard_exit()
        fired.set()
        timer = threading.Timer(grace, interrupt.hard_exit)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, previous)
