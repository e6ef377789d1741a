"""How many agent CLIs start at once, and which starts next.

A CLI's start-up is the busiest moment of its life (an interpreter loading, a first
screen drawn, the server following it). Twenty of them at once on a small machine slow
each other and every other terminal's status reads. So a creation takes a slot, and
gives it back once its CLI rests, or after `hold_seconds` at the latest: a CLI slow to
start because it waits on the network holds no one up for long.

A free slot goes to the waiting creation whose session has started the fewest CLIs
since it last had none starting, earliest request first (its ticket is taken as it
arrives): eight teams asking for four terminals each get one apiece before any gets its
second, so the terminal each loop needs next (asked for first) is not queued behind
another loop's whole team.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["StartupSlots"]


@dataclass(eq=False)
class _Waiter:
    group: Hashable
    ticket: int


class StartupSlots:
    """At most `count` CLI start-ups at once (default: one per core, at least two)."""

    def __init__(self, count: int | None = None, *, hold_seconds: float = 1.0) -> None:
        self.count = count or max(2, os.cpu_count() or 2)
        self.hold_seconds = hold_seconds
        self._changed = threading.Condition()
        self._busy = 0  # slots taken (and not yet given back)
        self._waiting: list[_Waiter] = []
        self._tickets = itertools.count()
        self._started: Counter[Hashable] = Counter()  # per group, since it last had none
        self._active: Counter[Hashable] = Counter()  # per group: waiting or starting

    @property
    def busy(self) -> int:
        """Slots taken now."""
        with self._changed:
            return self._busy

    @property
    def waiting(self) -> int:
        """Creations waiting for a slot now."""
        with self._changed:
            return len(self._waiting)

    def ticket(self) -> int:
        """A place in line, taken when the request arrives (on the server's event loop,
        in the order the requests came; worker threads would reach `slot` in any order)."""
        return next(self._tickets)

    @contextmanager
    def slot(self, group: Hashable | None = None, ticket: int | None = None) -> Iterator[None]:
        """Hold a slot for the block, or for `hold_seconds` if the block takes longer.

        `group` is the creation's session (None: a group of its own, a new session);
        `ticket` its place in line (`ticket()`; None: one taken now).
        """
        me = _Waiter(group, self.ticket() if ticket is None else ticket)
        key = me if group is None else group
        with self._changed:
            self._waiting.append(me)
            self._active[key] += 1
            self._changed.wait_for(lambda: self._busy < self.count and self._next() is me)
            self._waiting.remove(me)
            self._busy += 1
            self._started[key] += 1
            self._changed.notify_all()  # another slot may be free for the next in line
        given_back = threading.Lock()

        def give_back() -> None:
            if given_back.acquire(blocking=False):  # once, by the timer or the block's end
                with self._changed:
                    self._busy -= 1
                    self._changed.notify_all()

        timer = threading.Timer(self.hold_seconds, give_back)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            give_back()
            with self._changed:
                self._active[key] -= 1
                if not self._active[key]:
                    del self._active[key]
                    del self._started[key]

    def _next(self) -> _Waiter:
        """The waiter a free slot goes to (the lock held)."""
        return min(
            self._waiting,
            key=lambda w: (self._started[w if w.group is None else w.group], w.ticket),
        )
