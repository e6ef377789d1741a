"""Where notifications go: ntfy, a JSON webhook, apprise URLs, the desktop.

Each channel sends one `Notification` or raises; the `Notifier` turns a failure into a
single warning, so a channel never stops a run. HTTP channels time out after a few
seconds for the same reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.header import Header
from typing import Any, Protocol

import httpx

__all__ = [
    "HTTP_TIMEOUT",
    "AppriseChannel",
    "Channel",
    "DesktopChannel",
    "Notification",
    "NotifyAction",
    "NtfyChannel",
    "WebhookChannel",
    "desktop_available",
]

HTTP_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


# ntfy shows at most three action buttons.
NTFY_MAX_ACTIONS = 3


@dataclass(frozen=True)
class NotifyAction:
    """A one-time answer: POST to `url` (no body, no credentials) performs it."""

    label: str
    url: str


@dataclass(frozen=True)
class Notification:
    """One thing a person should know about the run, in every channel's terms."""

    event: str  # waiting, pass, fail, agent_restart, stall, budget, error, server_down
    title: str
    message: str
    priority: str = "default"  # ntfy's words: min, low, default, high, urgent
    tags: tuple[str, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)  # role, terminal_id, run, …
    actions: tuple[NotifyAction, ...] = ()  # answer buttons (ntfy), URLs (webhook)
    click: str = ""  # where tapping the notification leads (the agent's cockpit page)


class Channel(Protocol):
    name: str

    def send(self, notification: Notification) -> None: ...


class NtfyChannel:
    """ntfy's plain publish: POST the message to `<server>/<topic>` with Title, Priority
    and Tags headers."""

    name = "ntfy"

    def __init__(self, server: str, topic: str, client: httpx.Client) -> None:
        self.url = f"{server.rstrip('/')}/{topic}"
        self.client = client

    def send(self, notification: Notification) -> None:
        headers = {
            "Title": _header_text(notification.title),
            "Priority": notification.priority,
            "Tags": ",".join(notification.tags),
        }
        if notification.click:
            headers["Click"] = notification.click
        if notification.actions:
            headers["Actions"] = ntfy_actions_header(notification.actions)
        response = self.client.post(
            self.url, content=notification.message.encode("utf-8"), headers=headers
        )
        response.raise_for_status()


class WebhookChannel:
    """A JSON POST: `event`, `title`, `message`, `priority`, then the event's fields."""

    name = "webhook"

    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url = url
        self.client = client

    def send(self, notification: Notification) -> None:
        payload = {
            "source": "baton",
            "event": notification.event,
            "title": notification.title,
            "message": notification.message,
            "priority": notification.priority,
            **notification.fields,
        }
        if notification.click:
            payload["click"] = notification.click
        if notification.actions:
            payload["actions"] = [{"label": a.label, "url": a.url} for a in notification.actions]
        self.client.post(self.url, json=payload).raise_for_status()


class AppriseChannel:
    """Any service apprise knows (`NOTIFY_URLS`: `ntfys://…`, `json://…`, `slack://…`)."""

    name = "apprise"

    def __init__(self, urls: list[str]) -> None:
        import apprise  # imported only when NOTIFY_URLS is set: it is a large library

        self._apprise = apprise.Apprise()
        for url in urls:
            if not self._apprise.add(url):
                raise ValueError(f"NOTIFY_URLS: apprise does not understand {url!r}")
        self._types = {
            "urgent": apprise.NotifyType.FAILURE,
            "high": apprise.NotifyType.WARNING,
        }
        self._default = apprise.NotifyType.INFO
        self._success = apprise.NotifyType.SUCCESS

    def send(self, notification: Notification) -> None:
        kind = self._types.get(notification.priority, self._default)
        if notification.event == "pass":
            kind = self._success
        if not self._apprise.notify(
            body=notification.message, title=notification.title, notify_type=kind
        ):
            raise RuntimeError("apprise could not deliver to every NOTIFY_URLS target")


class DesktopChannel:
    """`notify-send`, where a desktop session (a display or a DBus session bus) exists."""

    name = "desktop"

    def __init__(self, program: str) -> None:
        self.program = program

    def send(self, notification: Notification) -> None:
        urgency = {"urgent": "critical", "high": "normal"}.get(notification.priority, "low")
        subprocess.run(
            [
                self.program,
                "--app-name=Baton",
                f"--urgency={urgency}",
                "--",
                notification.title,
                notification.message,
            ],
            check=True,
            capture_output=True,
            timeout=10,
        )


def desktop_available(environ: Mapping[str, str] | None = None) -> str | None:
    """The `notify-send` path when it is installed and a desktop session is there."""
    env = os.environ if environ is None else environ
    program = shutil.which("notify-send", path=env.get("PATH"))
    session = any(
        env.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
    )
    return program if program and session else None


def _header_text(text: str) -> str:
    """ASCII as is; anything else RFC 2047-encoded, which ntfy decodes."""
    if text.isascii():
        return text
    return Header(text, "utf-8").encode()


def ntfy_actions_header(actions: tuple[NotifyAction, ...]) -> str:
    """ntfy's `Actions` header: up to three `http` buttons that POST to their URL once
    (ntfy's http action; `clear=true` dismisses the notification after a success)."""
    parts = []
    for action in actions[:NTFY_MAX_ACTIONS]:
        label = _ntfy_label(action.label)
        parts.append(f'http, "{label}", {action.url}, method=POST, clear=true')
    return "; ".join(parts)


def _ntfy_label(label: str) -> str:
    """A button label the header can carry: ASCII, no quotes, short."""
    text = label.encode("ascii", "replace").decode("ascii").replace('"', "'")
    return text if len(text) <= 40 else text[:39] + "~"
