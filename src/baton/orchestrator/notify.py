"""Tell a person when the run needs them or has ended: the notifier behind NTFY_TOPIC,
WEBHOOK_URL, NOTIFY_URLS and desktop notifications.

The notifier listens to the run record (`RunEvents`), so it reacts to exactly what the
log says: an agent waiting for an answer (`waiting`), the run's PASS or FAIL
(`run_end`), an agent restarted (`agent_restart`), each step that brings a stalled turn
back (`stall`: interrupted, prompt sent again, restart), a budget reached (`budget`) and
an error that stopped the run (`error`). A channel that fails is warned about once and the
run goes on.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from baton.errors import ConfigError
from baton.orchestrator.config import Settings
from baton.orchestrator.notify_answers import WaitingDetails, WaitingReader
from baton.orchestrator.notify_channels import (
    HTTP_TIMEOUT,
    AppriseChannel,
    Channel,
    DesktopChannel,
    Notification,
    NtfyChannel,
    WebhookChannel,
    desktop_available,
)
from baton.orchestrator.notify_group import NotificationGrouper
from baton.orchestrator.notify_waiting import waiting_notification
from baton.orchestrator.runlog import RunLog
from baton.roles import ROLE_BY_OUTPUT, ROLE_BY_TERMINAL, Role
from baton.tls import tls_verify_for

__all__ = ["Notification", "Notifier", "notification_for", "notify_tls_verify"]


def notify_tls_verify(settings: Settings) -> ssl.SSLContext | bool:
    """httpx's `verify=` for the notifier's client: the CA bundle only for a public channel.

    Without ntfy or a webhook the client talks to the run's own API alone, so it is set
    up as the run's API client is (`tls_verify_for`: no bundle to load for plain HTTP).
    """
    if settings.ntfy_target is not None or settings.webhook_url:
        return True
    return tls_verify_for(settings.api)


class Notifier:
    """Sends the notifications of one run to its channels; an `EventListener`."""

    def __init__(
        self,
        channels: Sequence[Channel],
        log: RunLog,
        *,
        group_seconds: float = 0.0,
        reader: WaitingReader | None = None,
    ) -> None:
        self.channels = list(channels)
        self.log = log
        self.context: dict[str, Any] = {}  # run, state_file, wd, as the run reports them
        self.reader = reader  # the waiting agent's question and answer buttons
        self._warned: set[str] = set()
        self._client: httpx.Client | None = None
        self._grouper = NotificationGrouper(self.send, group_seconds)

    @classmethod
    def from_settings(cls, settings: Settings, log: RunLog) -> Notifier:
        """The channels the settings ask for (none: a notifier that sends nothing)."""
        notifier = cls([], log, group_seconds=settings.notify_group_seconds)
        ntfy = settings.ntfy_target
        client = httpx.Client(
            timeout=HTTP_TIMEOUT, follow_redirects=True, verify=notify_tls_verify(settings)
        )
        notifier._client = client
        if ntfy is not None:
            notifier.channels.append(NtfyChannel(ntfy[0], ntfy[1], client))
        if settings.webhook_url:
            notifier.channels.append(WebhookChannel(settings.webhook_url, client))
        urls = [url for url in re.split(r"[\s,]+", settings.notify_urls) if url]
        if urls:
            try:
                notifier.channels.append(AppriseChannel(urls))
            except ValueError as error:
                notifier.close()
                raise ConfigError(str(error)) from None
        program = desktop_available() if settings.notify_desktop else None
        if program:
            notifier.channels.append(DesktopChannel(program))
        notifier.reader = WaitingReader(
            settings.api,
            settings.token,
            settings.notify_public_url,
            settings.notify_action_seconds,
            client,
        )
        notifier.context.update(state_file=str(settings.state_path), wd=str(settings.wd))
        return notifier

    def close(self) -> None:
        """Send what a burst still holds, then let go of the HTTP client."""
        self._grouper.close()
        if self._client is not None:
            self._client.close()

    def __call__(self, record: dict[str, Any]) -> None:
        """Listener entry: remember the run's context, notify when the event calls for it."""
        if record.get("event") in ("run_start", "run_resume"):
            for name in ("state_file", "wd", "session_name"):
                if record.get(name):
                    self.context[name] = record[name]
        if not self.channels:
            return
        details = self._details(record)
        notification = notification_for(record, self.context, details)
        if notification is not None:
            self.notify(notification)

    def notify(self, notification: Notification) -> None:
        """Send, grouped with the others of its burst (NOTIFY_GROUP_SECONDS)."""
        self._grouper.add(notification)

    def send(self, notification: Notification) -> None:
        """Send to every channel now; a failing channel is one warning, once."""
        for channel in self.channels:
            try:
                channel.send(notification)
            except Exception as error:
                self._warn_once(channel.name, f"{channel.name} notification failed", error)

    def _details(self, record: Mapping[str, Any]) -> WaitingDetails | None:
        """What a waiting agent asks and its answer buttons; None when it cannot be read."""
        terminal = record.get("terminal_id")
        if record.get("event") != "waiting" or self.reader is None or not terminal:
            return None
        try:
            return self.reader.details(str(terminal))
        except Exception as error:
            self._warn_once("question", "reading the waiting agent's question failed", error)
            return None

    def _warn_once(self, name: str, what: str, error: Exception) -> None:
        if name not in self._warned:
            self._warned.add(name)
            self.log.warning(f"{what} ({_describe(error)}); the run goes on without it")


@dataclass(frozen=True)
class _Heard:
    """An event as the notification builders read it."""

    record: Mapping[str, Any]
    role: Role | None
    terminal: object
    where: str  # ", round 2, programmer" or ""
    fields: dict[str, Any]  # the notification's fields, each builder adds its own
    context: Mapping[str, Any]

    @property
    def who(self) -> str:
        return f"The {self.role.title}" if self.role else "An agent"


def notification_for(
    record: Mapping[str, Any],
    context: Mapping[str, Any] | None = None,
    details: WaitingDetails | None = None,
) -> Notification | None:
    """The notification an event calls for, or None for events nobody needs to hear of."""
    role = _role(record.get("role"))
    terminal = record.get("terminal_id")
    fields: dict[str, Any] = {
        **(context or {}),
        "role": role.terminal_key if role else record.get("role"),
        "terminal_id": terminal,
        "round": record.get("round"),
        "phase": record.get("phase"),
        "ts": record.get("ts"),
    }
    heard = _Heard(record, role, terminal, _where(record), fields, context or {})
    event = record.get("event")
    if event == "waiting":
        if role is None:
            return None
        return waiting_notification(role, str(terminal), heard.where, fields, details)
    build = _BUILDERS.get(str(event))
    return build(heard) if build is not None else None


def _run_end_notification(heard: _Heard) -> Notification | None:
    status = heard.record.get("final_status")
    if status not in ("PASS", "FAIL"):
        return None
    passed = status == "PASS"
    message = (
        f"The run {'passed' if passed else 'failed'} in round {heard.record.get('round')}"
        f" ({heard.context.get('wd', '')}). State: {heard.context.get('state_file', '')}"
    )
    heard.fields["final_status"] = status
    return Notification(
        "pass" if passed else "fail",
        f"Baton: RESULT: {status}",
        message,
        "default" if passed else "high",
        ("white_check_mark",) if passed else ("x",),
        heard.fields,
    )


def _restart_notification(heard: _Heard) -> Notification | None:
    record = heard.record
    if record.get("cause") == "stall":  # a `stall` event said it
        return None
    new = record.get("new_terminal_id")
    detail = f" as terminal {new}" if new else ""
    reason = f": {record['reason']}" if record.get("reason") else ""
    message = f"{heard.who} (terminal {heard.terminal}) was restarted{detail}{heard.where}{reason}."
    return Notification(
        "agent_restart", "Baton: agent restarted", message, "default", ("repeat",), heard.fields
    )


def _budget_notification(heard: _Heard) -> Notification | None:
    record = heard.record
    heard.fields.update(budget=record.get("budget"), limit=record.get("limit"))
    heard.fields["spent"] = record.get("spent")
    message = str(record.get("message") or f"budget {record.get('budget')} reached")
    return Notification(
        "budget", "Baton: budget reached", message, "high", ("money_with_wings",), heard.fields
    )


def _server_down_notification(heard: _Heard) -> Notification | None:
    record = heard.record
    seconds = int(float(record.get("seconds") or 0))
    window = int(float(record.get("window_seconds") or 0))
    heard.fields.update(api=record.get("api"), seconds=seconds, window_seconds=window)
    message = (
        f"The server {record.get('api')} has not answered for {seconds} s; the run waits "
        f"up to {window} s for it (SERVER_OUTAGE_SECONDS), then stops, resumable."
    )
    return Notification(
        "server_down",
        "Baton: the server is not answering",
        message,
        "high",
        ("warning",),
        heard.fields,
    )


def _error_notification(heard: _Heard) -> Notification | None:
    if heard.record.get("error") == "RunInterrupted":  # the person did it
        return None
    heard.fields["error"] = heard.record.get("error")
    message = f"The run stopped: {heard.record.get('message')}"
    return Notification(
        "error", "Baton: the run stopped", message, "urgent", ("warning",), heard.fields
    )


_STALL_STEPS = {
    "interrupt": "stalled ({reason}){where}; its turn was interrupted",
    "resend": "was sent its prompt again after the interrupt{where}",
    "restart": "stalled ({reason}){where}; its CLI is being restarted",
}


def _stall_notification(heard: _Heard) -> Notification | None:
    """One notification per step that brings a stalled turn back."""
    action = str(heard.record.get("action"))
    step = _STALL_STEPS.get(action)
    if step is None:
        return None
    what = step.format(reason=heard.record.get("reason") or "no progress", where=heard.where)
    heard.fields.update(action=action, reason=heard.record.get("reason"))
    return Notification(
        "stall",
        "Baton: agent stalled",
        f"{heard.who} (terminal {heard.terminal}) {what}.",
        "default",
        ("hourglass",),
        heard.fields,
    )


_BUILDERS: dict[str, Callable[[_Heard], Notification | None]] = {
    "run_end": _run_end_notification,
    "stall": _stall_notification,
    "agent_restart": _restart_notification,
    "budget": _budget_notification,
    "server_still_down": _server_down_notification,
    "error": _error_notification,
}


def _role(name: object) -> Role | None:
    if not isinstance(name, str):
        return None
    return ROLE_BY_TERMINAL.get(name) or ROLE_BY_OUTPUT.get(name)


def _where(record: Mapping[str, Any]) -> str:
    if record.get("round") is None:
        return ""
    return f" (round {record.get('round')}, {record.get('phase')} phase)"


def _describe(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
