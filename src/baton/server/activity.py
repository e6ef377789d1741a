"""`last_active` times, kept in memory and written to the registry in batches.

Every status change and every input is activity; committing each one made the screen
watcher wait on sqlite before its status event went out. A touch now only updates a dict;
a writer thread commits what gathered, at most every `interval` seconds, in one
transaction. Reads overlay what is not committed yet, so `last_active` is never stale.
Losing the last interval of touches in a crash only makes a terminal look idle a moment
earlier than it was: the terminals, sessions, inbox and idempotency rows are written at
once, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

__all__ = ["ActivityBatch"]

logger = logging.getLogger(__name__)

Writer = Callable[[Mapping[str, float]], None]


class ActivityBatch:
    """Touches by terminal id, committed by `write` on a thread of its own."""

    def __init__(self, write: Writer, *, interval: float = 0.5) -> None:
        self._write = write
        self.interval = interval
        self._guard = threading.Lock()
        self._wanted = threading.Condition(self._guard)
        self._pending: dict[str, float] = {}
        self._writing: dict[str, float] = {}  # taken by the writer, not committed yet
        self._closed = False
        self._thread: threading.Thread | None = None

    def touch(self, terminal_id: str, when: float) -> None:
        """Note activity at `when`; never waits for the database."""
        with self._guard:
            if self._closed:
                return
            if when >= self._pending.get(terminal_id, float("-inf")):
                self._pending[terminal_id] = when
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="baton-activity", daemon=True
                )
                self._thread.start()
            self._wanted.notify()

    def uncommitted(self) -> dict[str, float]:
        """The newest touch of each terminal not committed yet (absent: its row is current).

        Take it before reading the rows: a batch committed in between is then in the
        rows or here, never in neither.
        """
        with self._guard:
            touches = dict(self._writing)
            for terminal_id, when in self._pending.items():
                touches[terminal_id] = max(when, touches.get(terminal_id, when))
            return touches

    def forget(self, terminal_id: str) -> None:
        """A deleted terminal's touches are not written."""
        with self._guard:
            self._pending.pop(terminal_id, None)

    def flush(self) -> None:
        """Commit what gathered, now, on the calling thread."""
        with self._guard:
            batch, self._pending = self._pending, {}
            self._writing = {**self._writing, **batch}
        self._commit(batch)

    def close(self) -> None:
        """Stop the writer and commit the last touches (before the database closes)."""
        with self._guard:
            self._closed = True
            thread = self._thread
            self._wanted.notify()
        if thread is not None:
            thread.join()
        self.flush()

    def _run(self) -> None:
        while True:
            with self._guard:
                self._wanted.wait_for(lambda: bool(self._pending) or self._closed)
                if self._closed:
                    return
            self.flush()
            with self._guard:  # gather touches for a while: one commit for many
                self._wanted.wait_for(lambda: self._closed, timeout=self.interval)

    def _commit(self, batch: dict[str, float]) -> None:
        if not batch:
            return
        try:
            self._write(batch)
        except Exception:  # a full disk: the next touch tries again; reads still see it
            logger.exception("cannot record terminal activity")
            with self._guard:
                for terminal_id, when in batch.items():
                    self._pending.setdefault(terminal_id, when)
            return
        finally:
            with self._guard:
                for terminal_id, when in batch.items():
                    if self._writing.get(terminal_id) == when:
                        del self._writing[terminal_id]
