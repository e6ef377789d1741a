"""Whether a terminal's screen model may be trusted: it must equal what tmux shows.

tmux draws a byte the moment the CLI writes it; the byte reaches the pane log a moment
later (through the `cat` of pipe-pane). A capture can therefore be ahead of the log. So
nothing is trusted or judged from one look: a seed, or an audit capture, is checked one
interval later (by the watcher's next pane check), and only if the log did not grow in
between.
"""

from __future__ import annotations

import logging

from baton.errors import TerminalExitedError
from baton.screen import normalize_screen
from baton.server.live_terminal import LiveTerminal, log_size, seeded_emulator
from baton.server.tmux import TmuxServer

__all__ = ["ScreenTrust"]

logger = logging.getLogger("baton.server.live")


class ScreenTrust:
    """Seeds models from tmux, confirms them, and audits trusted ones against tmux."""

    def __init__(self, tmux: TmuxServer) -> None:
        self.tmux = tmux

    def seed(self, live: LiveTerminal) -> bool:
        """Seed the model from tmux's rendering; it is trusted once `_confirm` agrees."""
        with live.lock:
            before = log_size(live.log_path)
            snapshot = self.tmux.snapshot(live.pane)
            after = log_size(live.log_path)
            live.candidate = None
            if snapshot is None or before != after:
                return False  # output arrived during the capture: next interval
            emulator = seeded_emulator(snapshot)
            if emulator.visible() != normalize_screen(snapshot.plain):
                logger.info("terminal %s: screen cannot be seeded", live.terminal_id)
                return False
            live.emulator = emulator
            live.offset = after
            live.candidate = after
            return True

    def confirm(self, live: LiveTerminal) -> bool:
        """Trust a seeded model when the pane stayed quiet and tmux still agrees."""
        with live.lock:
            offset = live.candidate
            live.candidate = None
            if offset is None or log_size(live.log_path) != offset:
                return False
            captured = self._capture(live)
            if log_size(live.log_path) != offset or live.emulator.visible() != captured:
                return False
            live.verified = True
            return True

    def audit(self, live: LiveTerminal) -> None:
        """Capture a trusted terminal now, to compare with its model one interval later."""
        with live.lock:
            live.catch_up()
            offset = live.offset
        captured = self._capture(live)
        if captured is None:
            return  # the pane is gone: the next interval check marks the terminal exited
        with live.lock:
            live.audit = (offset, captured)

    def _capture(self, live: LiveTerminal) -> str | None:
        """The pane's screen now, normalised; None once the pane is gone or not its own."""
        try:
            return normalize_screen(self.tmux.capture(live.pane))
        except TerminalExitedError:
            return None

    def finish_audit(self, live: LiveTerminal) -> None:
        """Compare the model with the earlier capture if the pane stayed quiet since."""
        with live.lock:
            audit, live.audit = live.audit, None
            if audit is None or not live.verified:
                return
            offset, captured = audit
            live.catch_up()
            if live.offset != offset or live.emulator.visible() == captured:
                return  # it moved on (nothing to judge), or it agrees
            logger.warning(
                "terminal %s: screen model differs from tmux; reseeding", live.terminal_id
            )
            live.verified = False
        self.seed(live)
