"""What a "needs you" notification carries besides words: the agent's question and options,
one-time answer buttons and the link to the agent's cockpit page.

The question is read from the terminal's screen (`GET /terminals/{id}/output`); the
buttons are minted by the run's own server (`POST /baton/actions`, with the run's token),
which keeps only their digests and performs each at most once. The master token never
leaves this process: a button's URL holds only its own one-time token.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from baton.dialog import Dialog, read_dialog
from baton.orchestrator.notify_channels import NotifyAction

__all__ = ["WaitingDetails", "WaitingReader"]


@dataclass(frozen=True)
class WaitingDetails:
    dialog: Dialog
    actions: tuple[NotifyAction, ...]
    cockpit_url: str


class WaitingReader:
    """Reads a waiting terminal's dialog and mints its answers on the run's server."""

    def __init__(
        self,
        api: str,
        token: str | None,
        public_url: str,
        action_seconds: float,
        client: httpx.Client,
    ) -> None:
        self.api = api.rstrip("/")
        self.public_url = (public_url or api).rstrip("/")
        self.action_seconds = action_seconds
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def cockpit_url(self, terminal_id: str) -> str:
        return f"{self.public_url}/ui/terminals/{terminal_id}"

    def details(self, terminal_id: str) -> WaitingDetails:
        """The dialog, its buttons (none when the server mints none) and the cockpit link.

        Raises httpx errors: the notifier warns once and sends the notification without.
        """
        response = self.client.get(
            f"{self.api}/terminals/{terminal_id}/output",
            params={"mode": "full"},
            headers=self.headers,
        )
        response.raise_for_status()
        dialog = read_dialog(str(response.json().get("output") or ""))
        actions = self._mint(terminal_id, dialog) if dialog.options else ()
        return WaitingDetails(dialog, actions, self.cockpit_url(terminal_id))

    def _mint(self, terminal_id: str, dialog: Dialog) -> tuple[NotifyAction, ...]:
        if self.action_seconds <= 0:
            return ()
        choices = [{"label": o.label[:80], "keys": list(o.keys)} for o in dialog.options]
        response = self.client.post(
            f"{self.api}/baton/actions",
            json={
                "terminal_id": terminal_id,
                "choices": choices,
                "expires_in": self.action_seconds,
            },
            headers=self.headers,
        )
        if response.status_code in (404, 405):
            return ()  # not baton serve (a stock cao-server): no buttons, the words remain
        response.raise_for_status()
        minted = response.json()["actions"]
        return tuple(
            NotifyAction(option.label, f"{self.public_url}{action['path']}")
            for option, action in zip(dialog.options, minted, strict=True)
        )
