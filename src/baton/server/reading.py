"""Reading terminals: their description, status, screen and output, from memory.

The screen watcher (`live`) keeps each terminal's screen and status current, so a read
costs no tmux process. Where the model cannot be trusted yet (a terminal adopted after
a restart, not yet seeded; a resized window), the read falls back to `capture-pane`, as
it was before the model existed.
"""

from __future__ import annotations

from baton.errors import NotFoundError
from baton.screen import normalize_screen
from baton.server.live import LiveTerminal, ScreenWatcher
from baton.server.records import TerminalRecord, iso_utc
from baton.server.registry import Registry
from baton.server.runtime import TerminalRuntime
from baton.server.tmux import TmuxServer
from baton.status import TerminalStatus
from baton.wire import ProgressJSON, TerminalJSON

__all__ = ["TerminalReader"]


class TerminalReader:
    """Describe terminals and read their screens, from the live model where trusted."""

    def __init__(
        self,
        *,
        registry: Registry,
        tmux: TmuxServer,
        runtime: TerminalRuntime,
        watcher: ScreenWatcher,
    ) -> None:
        self.registry = registry
        self.tmux = tmux
        self.runtime = runtime
        self.watcher = watcher

    def record(self, terminal_id: str) -> TerminalRecord:
        record = self.registry.get_terminal(terminal_id)
        if record is None:
            raise NotFoundError(f"terminal {terminal_id!r} not found")
        return record

    def describe(self, record: TerminalRecord) -> TerminalJSON:
        """The terminal as the CAO API shows it, with its live status."""
        live = self._trusted(record)  # once: its status and progress agree
        return {
            "id": record.id,
            "name": record.name,
            "provider": record.provider,
            "session_name": record.session_name,
            "agent_profile": record.agent_profile,
            "status": str(self._status(record, live)),
            "working_directory": record.working_directory,
            "tmux_session": record.session_name,
            "tmux_window": record.name,
            "last_active": iso_utc(self._last_active(record)),
            "initial_delivery": self.runtime.initial_delivery(record),
            "caller_id": record.caller_id,
            "group": list(record.group) if record.group else None,
            "metadata": dict(record.metadata) if record.metadata is not None else None,
            # The list a CAO client asked for, else the profile's (see tool_policy); an
            # empty list denies every tool, no list at all allows everything.
            "allowed_tools": (
                list(record.allowed_tools) if record.allowed_tools is not None else ["*"]
            ),
            **self._progress(live),
        }

    @staticmethod
    def _progress(live: LiveTerminal | None) -> ProgressJSON:
        """Baton's own fields: when the screen (its animation aside) or a native signal
        last changed, and the seconds since; null while the live model is not trusted."""
        if live is None or live.exited or live.progress_at is None:
            return {"last_change_at": None, "quiet_seconds": None}
        with live.lock:
            changed, quiet = live.progress_at[0], live.quiet_seconds()
        return {
            "last_change_at": iso_utc(changed),
            "quiet_seconds": round(quiet, 3) if quiet is not None else None,
        }

    def _last_active(self, record: TerminalRecord) -> float | None:
        """The registry's value, read again: a status change may just have recorded one."""
        fresh = self.registry.get_terminal(record.id)
        return (fresh or record).last_active

    def status(self, record: TerminalRecord) -> TerminalStatus:
        """`error` once the CLI has exited; otherwise what the provider reads on screen."""
        return self._status(record, self._trusted(record))

    def _status(self, record: TerminalRecord, live: LiveTerminal | None) -> TerminalStatus:
        if live is not None:
            if live.exited:
                return TerminalStatus.ERROR
            if live.status is not None:
                return live.status
        state = self.tmux.pane_state(record.pane)
        if not state.exists or state.dead:
            return TerminalStatus.ERROR
        provider, ctx = self.runtime.provider(record)
        return provider.status(self._captured(record), ctx)

    def in_memory(self, terminal_id: str) -> bool:
        """Whether the terminal's status can be answered without asking tmux."""
        live = self.watcher.get(terminal_id)
        return live is not None and (live.exited or (live.verified and live.status is not None))

    def exited(self, record: TerminalRecord) -> bool:
        """Whether the CLI has exited (or its pane is gone)."""
        live = self.watcher.get(record.id)
        if live is not None and live.exited:
            return True
        if live is not None and live.pid is not None:
            return False  # watched: its exit would have been seen
        state = self.tmux.pane_state(record.pane)
        return not state.exists or state.dead

    def screen(self, record: TerminalRecord) -> str:
        """The visible screen, normalised, as `capture-pane -p` prints it."""
        live = self._trusted(record)
        if live is not None:
            return live.screen()
        return self._captured(record)

    def get_output(self, terminal_id: str, mode: str) -> str:
        """The whole scrollback (`full`) or the agent's last answer (`last`)."""
        record = self.record(terminal_id)
        live = self._trusted(record)
        if live is not None and not live.exited and live.emulator.history_complete:
            history = live.history()
        else:
            if not self.tmux.pane_state(record.pane).exists:
                return ""
            history = normalize_screen(self.tmux.capture(record.pane, history=True))
        if mode == "full":
            return history
        provider, ctx = self.runtime.provider(record)
        return provider.last_message(history, ctx)

    def _trusted(self, record: TerminalRecord) -> LiveTerminal | None:
        """The terminal's live model, brought up to date, when it can be trusted."""
        live = self.watcher.get(record.id)
        if live is None:
            return None
        if live.stale():
            self.watcher.evaluate(live)
        return live if live.verified or live.exited else None

    def _captured(self, record: TerminalRecord) -> str:
        return normalize_screen(self.tmux.capture(record.pane))
