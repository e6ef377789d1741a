"""The end of a terminal: its CLI, everything the CLI started, its window and record.

Deleting a terminal stops following it, stops the CLI and its process tree (and any
process carrying the terminal's marker variable), removes the window, its token and
(unless transcripts are kept) its runtime folder, and removes the session once its last
terminal is gone.
"""

from __future__ import annotations

from collections.abc import Callable

from baton.server.creation import TERMINAL_ID_VARIABLE
from baton.server.live import ScreenWatcher
from baton.server.processes import kill_process_tree, kill_processes_with_env
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.registry import Registry
from baton.server.runtime import TerminalRuntime
from baton.server.tmux import TmuxServer

__all__ = ["TerminalLifecycle"]


class TerminalLifecycle:
    """Stops and deletes terminals."""

    def __init__(
        self,
        *,
        registry: Registry,
        tmux: TmuxServer,
        runtime: TerminalRuntime,
        reader: TerminalReader,
        watcher: ScreenWatcher,
        on_stopped: Callable[[TerminalRecord], None],
        on_deleted: Callable[[TerminalRecord], None] = lambda _record: None,
    ) -> None:
        self.registry = registry
        self.tmux = tmux
        self.runtime = runtime
        self.reader = reader
        self.watcher = watcher
        self._on_stopped = on_stopped
        self._on_deleted = on_deleted

    def delete_terminal(self, terminal_id: str) -> None:
        record = self.reader.record(terminal_id)
        self.stop(record)
        self.registry.remove_terminal(terminal_id)
        self._on_deleted(record)
        if not self.registry.terminals(record.session_name):
            self.tmux.kill_session(record.session_name)
            self.registry.remove_session(record.session_name)

    def stop(self, record: TerminalRecord) -> None:
        """Stop the CLI, whatever it started, and its window (the record stays)."""
        provider, ctx = self.runtime.provider(record)
        self.watcher.forget(record.id)
        try:
            provider.cleanup(ctx)
        finally:
            state = self.tmux.pane_state(record.pane_id)
            if state.pid is not None:
                kill_process_tree(state.pid)
            kill_processes_with_env(TERMINAL_ID_VARIABLE, record.id)
            self.tmux.kill_window(record.window_id)
            self.runtime.discard(record.id)
            self._on_stopped(record)
