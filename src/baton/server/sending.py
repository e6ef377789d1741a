"""Typing into terminals: a message pasted and submitted, exit keys sent.

Input is confirmed, not assumed: after the submit keys the screen must change, or the
caller hears that the CLI did not take it. The screen is read from the live model.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from baton.errors import InputNotAcceptedError, TerminalExitedError
from baton.server.creation import ServiceTimings
from baton.server.delivery import MessageDelivery
from baton.server.idempotency import outcome_if_cut_off
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.runtime import TerminalRuntime
from baton.server.tmux import TmuxServer

__all__ = ["InputSender"]

_POLL_SECONDS = 0.05


class InputSender:
    """Sends messages and keys to a terminal's CLI, one caller at a time per terminal."""

    def __init__(
        self,
        *,
        tmux: TmuxServer,
        runtime: TerminalRuntime,
        reader: TerminalReader,
        timings: ServiceTimings,
        delivery: MessageDelivery,
        on_accepted: Callable[[str], None],
    ) -> None:
        self.tmux = tmux
        self.delivery = delivery
        self._on_accepted = on_accepted
        self.runtime = runtime
        self.reader = reader
        self.timings = timings

    def send_input(self, terminal_id: str, message: str) -> None:
        """Paste `message`, submit it, and confirm the CLI took it (its screen changed)."""
        record = self.reader.record(terminal_id)
        prepared = self.delivery.prepare(message)
        provider, _ = self.runtime.provider(record)
        with self.runtime.lock_for(terminal_id):
            self._require_alive(record)
            self.delivery.paste(record.pane_id, prepared, provider)
            self._require_alive(record)
            # Compared with the screen after the paste, not before it: a command the CLI
            # swallows (an unknown slash command) leaves the screen as it was before.
            # The paste must have finished drawing, or its late redraw would look like
            # the CLI reacting to the submit keys.
            pasted = self._settled_screen(record)
            self.delivery.submit(record.pane_id, provider)
            outcome_if_cut_off(200, {"success": True})  # typed: a repeated key must not retype
            deadline = time.monotonic() + self.timings.accept_timeout
            while time.monotonic() < deadline:
                if self.reader.screen(record) != pasted:
                    self._on_accepted(terminal_id)
                    return
                self._require_alive(record)
                time.sleep(_POLL_SECONDS)
            raise InputNotAcceptedError(
                f"terminal {terminal_id}: the CLI did not take the input "
                f"(screen unchanged after {self.timings.accept_timeout:g}s)"
            )

    def _settled_screen(self, record: TerminalRecord, *, limit: float = 2.0) -> str:
        """The screen once two reads in a row agree (or after `limit` seconds)."""
        previous = self.reader.screen(record)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
            current = self.reader.screen(record)
            if current == previous:
                return current
            previous = current
        return previous

    def exit_terminal(self, terminal_id: str) -> None:
        """Ask the CLI to quit with its own exit keys; nothing is typed once it has exited."""
        record = self.reader.record(terminal_id)
        provider, _ = self.runtime.provider(record)
        with self.runtime.lock_for(terminal_id):
            if not self.reader.exited(record):
                self.tmux.send_keys(record.pane_id, provider.exit_keys)

    def require_alive(self, record: TerminalRecord) -> None:
        """TerminalExitedError (409) once the terminal's CLI has exited."""
        self._require_alive(record)

    def _require_alive(self, record: TerminalRecord) -> None:
        if self.reader.exited(record):
            raise TerminalExitedError(
                f"terminal {record.id}: the agent CLI has exited; input refused"
            )
