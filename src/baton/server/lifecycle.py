"""The end of a terminal: its CLI, everything the CLI started, its window and record.

Deleting a terminal stops following it, stops the CLI and its process tree (and any
process carrying the terminal's marker variable), removes the window, its token and
(unless transcripts are kept) its runtime folder, and removes the session once its last
terminal is gone.

A server killed between starting a CLI's window and recording its terminal leaves a pane
no API call can reach; `close_unrecorded` stops such panes when the next server starts,
and drops a session recorded without any terminal, so a repeated create finds its name
free.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from baton.server.creation import TERMINAL_ID_VARIABLE
from baton.server.live import ScreenWatcher
from baton.server.processes import stop_terminal_processes
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.registry import Registry
from baton.server.runtime import TerminalRuntime
from baton.server.tmux import PaneInfo, PaneRef, TmuxServer

__all__ = ["TerminalLifecycle"]

logger = logging.getLogger("baton.server")


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
        self.stop_all([record])

    def stop_all(self, records: Sequence[TerminalRecord]) -> None:
        """Stop several terminals (a session's) together: one sweep of the processes.

        A provider's cleanup that fails stops nothing else; its error is raised at the end.
        """
        failed: Exception | None = None
        for record in records:
            provider, ctx = self.runtime.provider(record)
            self.watcher.forget(record.id)
            try:
                provider.cleanup(ctx)
            except Exception as error:
                failed = failed or error
        panes = [self.tmux.pane_state(record.pane) for record in records]
        stop_terminal_processes(
            [state.pid for state in panes if state.pid is not None],
            TERMINAL_ID_VARIABLE,
            [record.id for record in records],
        )
        for record in records:
            self.tmux.kill_window(record.pane)
            self.runtime.discard(record.id)
            self._on_stopped(record)
        if failed is not None:
            raise failed

    def close_unrecorded(self, panes: Mapping[str, PaneInfo]) -> list[str]:
        """Stop every pane bound to a terminal the registry does not know; their ids.

        Such a pane was made by a server that died before it recorded the terminal: its
        CLI (and whatever it started) is stopped and its window closed. Sessions the
        registry holds without a terminal are forgotten (and closed in tmux) too.
        """
        known = {record.id for record in self.registry.terminals()}
        unrecorded = [
            info for info in panes.values() if info.terminal_id and info.terminal_id not in known
        ]
        for info in unrecorded:
            logger.warning(
                "closing tmux pane %s of terminal %s, which was started but never recorded",
                info.pane_id,
                info.terminal_id,
            )
        stop_terminal_processes(
            [info.pid for info in unrecorded if info.pid is not None and not info.dead],
            TERMINAL_ID_VARIABLE,
            [info.terminal_id for info in unrecorded],
        )
        closed = []
        for info in unrecorded:
            self.tmux.kill_window(PaneRef(pane_id=info.pane_id, terminal_id=info.terminal_id))
            closed.append(info.terminal_id)
        sessions_in_use = {record.session_name for record in self.registry.terminals()}
        for session in self.registry.sessions():
            if session.name not in sessions_in_use:
                self.tmux.kill_session(session.name)
                self.registry.remove_session(session.name)
        return closed
