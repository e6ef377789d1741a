"""`run-step` over a terminal service that plays a CLI's statuses (no tmux, no HTTP)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from baton.errors import StepFailedError
from baton.server.events import EventHub, TerminalEvent
from baton.server.steps import StepRequest, StepRunner, StepTimings
from baton.status import TerminalStatus


@dataclass
class _Record:
    id: str = "abcd1234"
    provider: str = "codex"


@dataclass
class _Terminals:
    """The calls a step makes; `statuses` are read one per status call."""

    created: TerminalStatus
    statuses: list[TerminalStatus]
    sent: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def create_terminal(self, request: Any) -> dict[str, Any]:
        return {"id": "abcd1234", "status": str(self.created)}

    def record(self, terminal_id: str) -> _Record:
        return _Record(terminal_id)

    def status(self, record: _Record) -> TerminalStatus:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def send_input(self, terminal_id: str, message: str) -> None:
        self.sent.append(message)

    def get_output(self, terminal_id: str, mode: str) -> str:
        return "ANALYST_SUMMARY done"

    def delete_terminal(self, terminal_id: str) -> None:
        self.deleted.append(terminal_id)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _runner(terminals: _Terminals, clock: _Clock) -> StepRunner:
    return StepRunner(terminals, clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]


def test_a_worker_busy_for_a_moment_after_it_first_rested_still_gets_the_prompt() -> None:
    """Codex flickers `processing` once right after its first rest."""
    busy, idle, done = (
        TerminalStatus.PROCESSING,
        TerminalStatus.IDLE,
        TerminalStatus.COMPLETED,
    )
    terminals = _Terminals(created=busy, statuses=[busy, idle, idle, busy, done])
    clock = _Clock()
    result = _runner(terminals, clock).run(
        StepRequest(provider="codex", agent="system_analyst", prompt="Analyse it.", timeout=60)
    )
    assert terminals.sent == ["Analyse it."]
    assert result.last_message == "ANALYST_SUMMARY done"
    assert terminals.deleted == ["abcd1234"]


def test_a_worker_that_never_rests_runs_out_of_the_step_time() -> None:
    terminals = _Terminals(created=TerminalStatus.PROCESSING, statuses=[TerminalStatus.PROCESSING])
    clock = _Clock()
    with pytest.raises(StepFailedError) as failed:
        _runner(terminals, clock).run(
            StepRequest(provider="codex", agent="system_analyst", prompt="x", timeout=5)
        )
    assert failed.value.kind == "timeout" and failed.value.status_code == 504
    assert terminals.sent == []


@dataclass
class _EventTerminals(_Terminals):
    """Statuses that change in another thread and are announced as events, as the screen
    watcher does; polling alone would not see them within the step's hour."""

    hub: EventHub = field(default_factory=EventHub)

    def answers_from_memory(self, terminal_id: str) -> bool:
        return True

    def send_input(self, terminal_id: str, message: str) -> None:
        super().send_input(terminal_id, message)
        threading.Timer(0.05, self._announce, (TerminalStatus.PROCESSING,)).start()
        threading.Timer(0.1, self._announce, (TerminalStatus.COMPLETED,)).start()

    def _announce(self, status: TerminalStatus) -> None:
        self.statuses[:] = [status]
        self.hub.publish(
            TerminalEvent(kind="status", terminal_id="abcd1234", session_name="s", status=status)
        )


def test_a_step_is_woken_by_the_terminals_events_not_by_a_timer() -> None:
    idle = TerminalStatus.IDLE
    terminals = _EventTerminals(created=idle, statuses=[idle])
    hour = StepTimings(poll_seconds=3600, event_cap_seconds=3600)
    runner = StepRunner(terminals, events=terminals.hub, timings=hour)  # type: ignore[arg-type]
    result = runner.run(StepRequest(provider="codex", agent="a", prompt="Go.", timeout=7200))
    assert result.last_message == "ANALYST_SUMMARY done"
    assert terminals.sent == ["Go."] and terminals.deleted == ["abcd1234"]
