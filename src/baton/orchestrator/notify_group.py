"""Bursts of notifications sent as one: five agents waiting within a few seconds make one
notification listing them, not five pings in one second.

The first notification of a burst opens a window of `NOTIFY_GROUP_SECONDS`; everything
that comes before it closes is sent with it, when it closes (from a timer thread).
`close` sends what is pending at once, so a run that ends loses nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from baton.orchestrator.notify_channels import Notification, NotifyAction

__all__ = ["NotificationGrouper", "combine"]

_PRIORITY = ("min", "low", "default", "high", "urgent")


class NotificationGrouper:
    """Collects notifications for `seconds`, then hands `send` one (combined) notification."""

    def __init__(self, send: Callable[[Notification], None], seconds: float) -> None:
        self._send = send
        self.seconds = seconds
        self._pending: list[Notification] = []
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # one burst at a time, in order

    def add(self, notification: Notification) -> None:
        if self.seconds <= 0:
            with self._sending:
                self._send(notification)
            return
        with self._lock:
            self._pending.append(notification)
            if self._timer is None:
                self._timer = threading.Timer(self.seconds, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Send what is pending now (one notification, combined when several)."""
        with self._sending:
            with self._lock:
                pending, self._pending = self._pending, []
                timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if pending:
                self._send(combine(pending))

    def close(self) -> None:
        self.flush()


def combine(notifications: Sequence[Notification]) -> Notification:
    """One notification for several: each one's title and message, the highest priority;
    answer buttons named by their agent, and the first agent's page to open."""
    if len(notifications) == 1:
        return notifications[0]
    waiting = [n for n in notifications if n.event == "waiting"]
    if len(waiting) == len(notifications):
        title = f"Baton: {len(waiting)} agents need you"
    else:
        title = f"Baton: {len(notifications)} notifications"
    message = "\n\n".join(f"{n.title.removeprefix('Baton: ')}\n{n.message}" for n in notifications)
    priority = max((n.priority for n in notifications), key=_rank)
    tags = tuple(dict.fromkeys(tag for n in notifications for tag in n.tags))
    actions = tuple(
        NotifyAction(f"{_who(n)}: {action.label}", action.url)
        for n in notifications
        for action in n.actions
    )
    items = [_item(n) for n in notifications]
    click = next((n.click for n in notifications if n.click), "")
    return Notification("group", title, message, priority, tags, {"items": items}, actions, click)


def _rank(priority: str) -> int:
    return _PRIORITY.index(priority) if priority in _PRIORITY else 2


def _who(notification: Notification) -> str:
    role = notification.fields.get("role")
    return str(role) if role else notification.event


def _item(notification: Notification) -> dict[str, Any]:
    """One notification of a group as the webhook carries it."""
    item: dict[str, Any] = {
        "event": notification.event,
        "title": notification.title,
        "message": notification.message,
        "priority": notification.priority,
        **notification.fields,
    }
    if notification.click:
        item["click"] = notification.click
    if notification.actions:
        item["actions"] = [{"label": a.label, "url": a.url} for a in notification.actions]
    return item
