"""What a run's waits leave in its record: statuses, dialogs, reminders, server outages.

The handoff and the API client report what they see through small hooks; `WaitRecorder`
turns each into a run-record event (and, for an outage, a line), so the notifier and the
cockpits hear of it. The run's record and state change as the run starts, so both are
read when an event comes, never kept.
"""

from __future__ import annotations

from collections.abc import Callable

from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.handoff_status import waiting_hint
from baton.orchestrator.outage import OutagePhase, OutageReport
from baton.orchestrator.runlog import RunLog, format_duration
from baton.orchestrator.state import RunState
from baton.roles import Role
from baton.status import TerminalStatus

__all__ = ["WaitRecorder"]


class WaitRecorder:
    """The hooks `Handoff` and `ApiClient` call, recorded in the run's current record."""

    def __init__(
        self,
        settings: Settings,
        log: RunLog,
        events: Callable[[], RunEvents],
        state: Callable[[], RunState | None],
    ) -> None:
        self.settings = settings
        self.log = log
        self._events = events
        self._state = state

    def status_seen(self, role: Role, terminal_id: str, status: str, previous: str | None) -> None:
        """A wait saw a terminal change status: record it (and a dialog waiting for an answer)."""
        state = self._state()
        where = (
            {
                "round": state.current_round,
                "phase": state.current_phase,
                "cycle": state.current_cycle,
            }
            if state is not None
            else {}
        )
        fields = {"role": role.output_key, "terminal_id": terminal_id, **where}
        events = self._events()
        events.emit(EventKind.STATUS, **fields, status=status, previous=previous)
        if status == TerminalStatus.WAITING_USER_ANSWER:
            hint = waiting_hint(role, self.settings.state_path)
            events.emit(EventKind.WAITING, **fields, hint=hint)

    def reminded(self, role: Role, terminal_id: str, number: int) -> None:
        """Record a reminder sent to an agent that had not written its response file."""
        self._events().emit(
            EventKind.REMINDER,
            role=role.output_key,
            terminal_id=terminal_id,
            reminder=number,
            limit=self.settings.max_file_reminders,
        )

    def outage(self, report: OutageReport) -> None:
        """The server stopped or started answering again: one line, one event, each."""
        window = format_duration(report.window_seconds)
        fields = {
            "api": report.base_url,
            "cause": report.cause,
            "window_seconds": report.window_seconds,
        }
        events = self._events()
        if report.phase is OutagePhase.BEGAN:
            self.log.warning(
                f"server {report.base_url} not answering; waiting up to {window} "
                f"(SERVER_OUTAGE_SECONDS) for it to come back ({report.cause})"
            )
            events.emit(EventKind.SERVER_DOWN, **fields)
        elif report.phase is OutagePhase.LONG:
            events.emit(EventKind.SERVER_STILL_DOWN, **fields, seconds=report.seconds)
        else:
            self.log.info(
                f"server {report.base_url} answering again after {format_duration(report.seconds)}"
            )
            events.emit(EventKind.SERVER_BACK, **fields, seconds=round(report.seconds, 3))
