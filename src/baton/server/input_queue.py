"""The input queue: senders to one terminal type in the order they arrived, one at a time.

A sender takes its place in its terminal's line and waits until it is first; only then
does it wait for the CLI to be ready and type. So concurrent messages are never pasted
over each other, and each one's answer (200) comes in the order they were typed. A
caller that asked not to queue is refused at once when anyone is ahead of it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from baton.errors import InputQueueTimeoutError, TerminalBusyError

__all__ = ["InputQueue"]


class InputQueue:
    """First come, first served lines of senders, one per terminal; thread-safe."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._lines: dict[str, deque[object]] = {}

    @contextmanager
    def first_in_line(self, terminal_id: str, *, queue: bool, deadline: float) -> Iterator[bool]:
        """Hold the terminal's line from when this sender is first until the block ends.

        Yields whether the sender had to wait behind others. `queue=False`:
        TerminalBusyError when anyone is already in line. Otherwise InputQueueTimeoutError
        when `deadline` (monotonic) passes before this sender's turn.
        """
        ticket = object()
        with self._changed:
            line = self._lines.setdefault(terminal_id, deque())
            if line and not queue:
                raise TerminalBusyError(
                    f"terminal {terminal_id}: other input is being delivered "
                    f"({len(line)} in line); not queued (queue=false)"
                )
            waited = bool(line)
            line.append(ticket)
            first = self._changed.wait_for(
                lambda: line[0] is ticket, timeout=max(0.0, deadline - time.monotonic())
            )
            if not first:
                self._leave(terminal_id, line, ticket)
                raise InputQueueTimeoutError(
                    f"terminal {terminal_id}: still {len(line)} message(s) ahead in the input "
                    "queue when the wait ran out (BATON_INPUT_QUEUE_TIMEOUT); nothing was typed"
                )
        try:
            yield waited
        finally:
            with self._changed:
                self._leave(terminal_id, line, ticket)

    def _leave(self, terminal_id: str, line: deque[object], ticket: object) -> None:
        line.remove(ticket)
        if not line and self._lines.get(terminal_id) is line:
            del self._lines[terminal_id]
        self._changed.notify_all()
