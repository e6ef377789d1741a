"""Terminal events (status changes, launches, completions) fanned out to listeners.

The screen watcher runs in its own thread and the event routes on the server's event
loop, so `EventHub.publish` is thread-safe: it hands each event to every matching
subscriber's asyncio queue through that subscriber's loop (or, for code in a worker
thread, to a plain queue: `ThreadSubscription`). A subscriber that stops reading is
dropped once its queue is full, so a stalled client never holds memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "EventFilter",
    "EventHub",
    "Subscription",
    "TerminalEvent",
    "ThreadSubscription",
    "utc_now",
]

_QUEUE_LIMIT = 10_000


def utc_now() -> str:
    """The current time as ISO-8601 UTC, as events carry it."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class TerminalEvent:
    """One event about one terminal; `as_json` is what goes on the wire."""

    kind: str  # "status", "launch" or "completion"
    terminal_id: str
    session_name: str
    status: str | None = None
    previous_status: str | None = None
    at: str = field(default_factory=utc_now)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": self.kind,
            "terminal_id": self.terminal_id,
            "session_name": self.session_name,
        }
        if self.kind == "status":
            body["status"] = self.status
            body["previous_status"] = self.previous_status
        body.update(self.extra)
        body["at"] = self.at
        return body


@dataclass(frozen=True)
class EventFilter:
    """Which terminals a subscriber hears about; empty means every terminal."""

    terminal_ids: frozenset[str] = frozenset()
    session_name: str | None = None

    def matches(self, terminal_id: str, session_name: str) -> bool:
        if self.terminal_ids and terminal_id not in self.terminal_ids:
            return False
        return self.session_name is None or self.session_name == session_name


class Subscription:
    """One listener: an asyncio queue filled from any thread; None marks the end."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event_filter: EventFilter) -> None:
        self.loop = loop
        self.filter = event_filter
        self.queue: asyncio.Queue[TerminalEvent | None] = asyncio.Queue()
        self.closed = False

    def _deliver(self, event: TerminalEvent | None) -> None:
        if self.closed:
            return
        if event is None or self.queue.qsize() >= _QUEUE_LIMIT:
            self.closed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(event)

    async def next(self, timeout: float) -> TerminalEvent | None:
        """The next event, or None at the end of the stream; TimeoutError after `timeout`."""
        return await asyncio.wait_for(self.queue.get(), timeout)

    def push(self, event: TerminalEvent | None) -> None:
        """Hand an event over from any thread (through the subscriber's loop)."""
        try:
            self.loop.call_soon_threadsafe(self._deliver, event)
        except RuntimeError:  # its loop is closed: the listener is gone
            self.closed = True


class ThreadSubscription:
    """One listener in a worker thread (a blocking wait, not a coroutine)."""

    def __init__(self, event_filter: EventFilter) -> None:
        self.filter = event_filter
        self.closed = False
        self._queue: queue.Queue[TerminalEvent | None] = queue.Queue(_QUEUE_LIMIT)

    def push(self, event: TerminalEvent | None) -> None:
        if self.closed:
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.closed = True

    def wait(self, timeout: float) -> bool:
        """Block until an event arrives (True) or `timeout` passes (False); drains the rest.

        After the end of the stream (or a dropped, full queue) it just sleeps `timeout`, so
        a caller reading state after each wake-up keeps working, only without events.
        """
        if self.closed:
            time.sleep(max(0.0, timeout))
            return False
        try:
            event = self._queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        while event is not None:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return True
        self.closed = True
        return True


class EventHub:
    """Publish terminal events from any thread to the subscribers that match them."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription | ThreadSubscription] = set()
        self._lock = threading.Lock()
        self._closed = False

    def subscribe(self, event_filter: EventFilter) -> Subscription:
        """A new subscription on the running event loop."""
        subscription = Subscription(asyncio.get_running_loop(), event_filter)
        with self._lock:
            if self._closed:
                subscription._deliver(None)
            else:
                self._subscribers.add(subscription)
        return subscription

    @contextlib.contextmanager
    def watching(self, event_filter: EventFilter) -> Iterator[ThreadSubscription]:
        """A blocking subscription for the length of a `with` block (any thread)."""
        subscription = ThreadSubscription(event_filter)
        with self._lock:
            if self._closed:
                subscription.push(None)
            else:
                self._subscribers.add(subscription)
        try:
            yield subscription
        finally:
            self.unsubscribe(subscription)

    def unsubscribe(self, subscription: Subscription | ThreadSubscription) -> None:
        with self._lock:
            self._subscribers.discard(subscription)

    def publish(self, event: TerminalEvent) -> None:
        with self._lock:
            targets = [
                s
                for s in self._subscribers
                if s.filter.matches(event.terminal_id, event.session_name)
            ]
        for subscription in targets:
            subscription.push(event)

    def close(self) -> None:
        """End every stream (the server is stopping)."""
        with self._lock:
            self._closed = True
            targets = list(self._subscribers)
            self._subscribers.clear()
        for subscription in targets:
            subscription.push(None)
