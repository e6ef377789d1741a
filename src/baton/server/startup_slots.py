"""How many agent CLIs start at once.

A CLI's start-up is the busiest moment of its life (an interpreter loading, a first
screen drawn, the server following it). Twenty of them at once on a small machine slow
each other and every other terminal's status reads. So a creation takes a slot, and
gives it back once its CLI rests, or after `hold_seconds` at the latest: a CLI slow to
start because it waits on the network holds no one up for long.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["StartupSlots"]


class StartupSlots:
    """At most `count` CLI start-ups at once (default: one per core, at least two)."""

    def __init__(self, count: int | None = None, *, hold_seconds: float = 1.0) -> None:
        self.count = count or max(2, os.cpu_count() or 2)
        self.hold_seconds = hold_seconds
        self._free = threading.Semaphore(self.count)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot for the block, or for `hold_seconds` if the block takes longer."""
        self._free.acquire()
        given_back = threading.Lock()

        def give_back() -> None:
            if given_back.acquire(blocking=False):  # once, by the timer or the block's end
                self._free.release()

        timer = threading.Timer(self.hold_seconds, give_back)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            give_back()
