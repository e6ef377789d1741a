"""SIGINT/SIGTERM as `RunInterrupted`, deferred while the run state is being updated.

A signal normally interrupts whatever the run is doing (usually a poll sleep). Inside a
`critical()` block (sending a prompt, changing and saving the state) it is held until the
block ends, so a saved state is never half-updated and a prompt that went out is always
recorded as sent. A second signal while one is held stops the run at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from baton.errors import RunInterrupted

__all__ = ["SignalGuard"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalGuard:
    """Installs the handlers (main thread only) and restores the previous ones.

    `on_held` is called (inside the signal handler) when a signal is held: whatever the
    block waits for should now give up early, e.g. an absent server's outage window.
    """

    def __init__(self, on_held: Callable[[], None] | None = None) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._previous: dict[int, Any] = {}
        self._on_held = on_held

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signals are delivered to the main thread only; nothing to catch here
        for signum in _SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self._depth and self._pending is None:
            self._pending = signum
            if self._on_held is not None:
                self._on_held()
            return
        raise RunInterrupted(signum)  # not held, or a second signal: stop at once

    @contextmanager
    def critical(self) -> Iterator[None]:
        """Hold signals until the block ends, then raise the first one that arrived."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._pending is not None:
                signum, self._pending = self._pending, None
                raise RunInterrupted(signum)

    def hold(self) -> int | None:
        """Hold signals for good (the run is shutting down); the one already pending, if any."""
        self._depth += 1
        return self._pending
