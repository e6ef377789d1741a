"""The handoff's wait with a change waiter: it wakes on events instead of sleeping.

A scripted waiter stands in for inotify and the server's status events; time is a manual
clock that a quiet wait advances by its whole timeout, so the seeds' rules run exactly.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from baton.errors import AgentErrorStatus, HandoffTimeout, MissingResponseError
from baton.orchestrator.archive import Archive
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.handoff_pace import FAST_RECHECK_SECONDS, FAST_RECHECKS, HandoffTimings
from baton.orchestrator.response_files import response_path_for
from baton.orchestrator.runlog import RunLog


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Statuses:
    """get_status answers from a list (the last entry repeats)."""

    def __init__(self, statuses: list[str]) -> None:
        self.statuses = statuses
        self.reads = 0

    def send_input(self, terminal_id: str, message: str) -> None:
        pass

    def get_status(self, terminal_id: str) -> str:
        status = self.statuses[min(self.reads, len(self.statuses) - 1)]
        self.reads += 1
        return status

    def get_last_output(self, terminal_id: str) -> str:
        return "terminal output"


class ScriptedWaiter:
    """Returns a scripted wake per wait (None: quiet, the clock moves by the timeout)."""

    def __init__(self, clock: Clock, wakes: list[Callable[[], str | None]]) -> None:
        self.clock = clock
        self.wakes = wakes
        self.timeouts: list[float] = []
        self.since: list[str] = []
        self.told: str | None = None  # what latest_status answers
        self.moved_from: str | None = None  # set: the status the stream's newest event left

    def latest_status(self, terminal_id: str) -> str | None:
        return self.told

    def status_after(self, terminal_id: str, seen: str) -> str | None:
        told = self.latest_status(terminal_id)
        return told if self.moved_from in (None, seen) else None

    def wait(self, terminal_id: str, since: str, path: Path, timeout: float) -> str | None:
        self.timeouts.append(timeout)
        self.since.append(since)
        wake = self.wakes.pop(0)() if self.wakes else None
        if wake is None:
            self.clock.now += timeout
        else:
            self.clock.now += 0.001
        return wake


def _quiet() -> None:
    return None


def _handoff(
    tmp_path: Path,
    api: Statuses,
    wakes: list[Callable[[], str | None]],
    on_status: Callable[..., None] | None = None,
    **options: float,
) -> tuple[Handoff, Clock, ScriptedWaiter, io.StringIO]:
    clock = Clock()
    waiter = ScriptedWaiter(clock, wakes)
    log = io.StringIO()
    handoff = Handoff(
        api,
        tmp_path,
        archive=Archive(tmp_path / ".tmp" / "run"),
        timings=HandoffTimings(
            poll_seconds=options.get("poll", 2),
            idle_grace_seconds=options.get("grace", 30),
            response_timeout=options.get("timeout", 1800),
        ),
        log=RunLog(log),
        clock=clock,
        sleep=clock.sleep,
        waiter=waiter,
        on_status=on_status,
    )
    return handoff, clock, waiter, log


def _write(path: Path, text: str, wake: str | None = "file") -> Callable[[], str | None]:
    def write() -> str | None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return wake

    return write


def test_file_event_wakes_the_wait_without_sleeping(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    api = Statuses(["processing", "idle"])
    handoff, clock, waiter, _ = _handoff(tmp_path, api, [_write(path, "SUMMARY")])
    assert handoff.wait_for_response_file("t1", "analyst") == "SUMMARY"
    assert clock.slept == []
    assert waiter.timeouts == [2]
    assert clock.now < 0.01  # no poll interval went by


def test_status_event_wakes_the_wait_and_the_file_is_taken_at_rest(tmp_path: Path) -> None:
    path = response_path_for("tester", tmp_path)
    api = Statuses(["processing", "processing", "completed"])
    wakes = [_write(path, "RESULT: PASS"), lambda: "status"]
    handoff, clock, waiter, _ = _handoff(tmp_path, api, wakes)
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"
    assert clock.slept == []
    assert waiter.since == ["processing", "processing"]
    assert api.reads == 3


def test_a_live_status_stream_saves_the_reads_after_events(tmp_path: Path) -> None:
    path = response_path_for("tester", tmp_path)
    api = Statuses(["processing"])  # the server's GET never gets to say completed
    wakes: list[Callable[[], str | None]] = [_write(path, "RESULT: PASS", wake="file")]
    wakes.append(lambda: "status")
    handoff, clock, waiter, _ = _handoff(tmp_path, api, wakes)
    stream = iter(["processing", "completed"])  # what the stream said at each event
    waiter.latest_status = lambda terminal_id: next(stream)  # type: ignore[method-assign]
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"
    assert api.reads == 2  # the first, and one after the file event; the status event told
    assert waiter.timeouts == [2, 2]  # the stream will say when it is at rest: no hurry
    assert clock.slept == []


def test_a_file_event_never_takes_a_stale_status_from_the_stream(tmp_path: Path) -> None:
    """An agent brought back after it died: the stream's last word on it is still `error`."""
    path = response_path_for("programmer", tmp_path)
    api = Statuses(["processing", "completed"])
    handoff, _, waiter, _ = _handoff(tmp_path, api, [_write(path, "PROGRAMMER_SUMMARY")])
    waiter.latest_status = lambda terminal_id: "error"  # type: ignore[method-assign]
    assert handoff.wait_for_response_file("t1", "programmer") == "PROGRAMMER_SUMMARY"
    assert api.reads == 2


def test_a_stream_behind_the_last_read_is_read_afresh_and_reports_no_change(
    tmp_path: Path,
) -> None:
    """A dialog drawn at once is read as waiting while the stream still brings the
    `processing` before it: that is no change, and the dialog is reported once."""
    path = response_path_for("programmer", tmp_path)
    api = Statuses(["waiting_user_answer", "waiting_user_answer", "completed"])
    seen: list[tuple[str, str | None]] = []
    wakes: list[Callable[[], str | None]] = [lambda: "status", _write(path, "SUMMARY")]
    handoff, _, waiter, _ = _handoff(
        tmp_path,
        api,
        wakes,
        on_status=lambda role, tid, status, previous: seen.append((status, previous)),
    )
    waiter.told, waiter.moved_from = "processing", "idle"
    assert handoff.wait_for_response_file("t1", "programmer") == "SUMMARY"
    assert seen == [("waiting_user_answer", None), ("completed", "waiting_user_answer")]
    assert api.reads == 3


def test_a_status_event_saying_error_stops_the_wait_once_the_server_says_so(
    tmp_path: Path,
) -> None:
    api = Statuses(["processing", "error"])
    handoff, _, waiter, _ = _handoff(tmp_path, api, [lambda: "status"])
    waiter.told = "error"
    with pytest.raises(AgentErrorStatus):
        handoff.wait_for_response_file("t1", "tester")
    assert api.reads == 2


def test_a_late_error_event_about_a_replaced_cli_does_not_stop_the_wait(tmp_path: Path) -> None:
    """The stream's `error` spoke of the CLI that died; the one brought back is working."""
    path = response_path_for("tester", tmp_path)
    api = Statuses(["processing", "processing", "completed"])
    handoff, _, waiter, _ = _handoff(
        tmp_path, api, [lambda: "status", _write(path, "RESULT: PASS")]
    )
    waiter.told = "error"
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"


def test_after_a_file_event_status_is_reread_at_doubling_intervals_up_to_poll(
    tmp_path: Path,
) -> None:
    """A server without status events: the CLI comes to rest a moment after its file."""
    path = response_path_for("programmer", tmp_path)
    api = Statuses(["processing"] * (3 + FAST_RECHECKS + 7) + ["idle"])
    handoff, _, waiter, _ = _handoff(tmp_path, api, [_quiet, _write(path, "done")])
    assert handoff.wait_for_response_file("t1", "programmer") == "done"
    fast = FAST_RECHECK_SECONDS
    assert waiter.timeouts[:2] == [2, 2]
    assert waiter.timeouts[2:] == [fast] * FAST_RECHECKS + [fast * 2**n for n in range(1, 7)] + [
        2,
        2,
    ]
    assert max(waiter.timeouts) <= 2  # POLL_SECONDS stays the upper bound of a wait


def test_the_file_is_not_taken_while_processing_even_when_its_event_came(tmp_path: Path) -> None:
    path = response_path_for("tester", tmp_path)
    api = Statuses(["processing"] * 4 + ["idle"])
    handoff, _, _, _ = _handoff(tmp_path, api, [_write(path, "RESULT: FAIL")])
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: FAIL"
    assert api.reads == 5


def test_idle_grace_and_startup_guard_hold_with_a_waiter(tmp_path: Path) -> None:
    api = Statuses(["idle"])
    handoff, clock, waiter, log = _handoff(tmp_path, api, [], grace=30)
    with pytest.raises(MissingResponseError):
        handoff.wait_for_response_file("t1", "analyst")
    assert "never showed it started working" in log.getvalue()
    assert 60 <= clock.now <= 64
    assert max(waiter.timeouts) == 2


def test_status_wakes_never_end_the_idle_grace_early(tmp_path: Path) -> None:
    """A flickering status wakes the wait often; the grace still counts real time."""
    api = Statuses(["processing"] + ["idle"] * 1000)
    handoff, clock, _, _ = _handoff(tmp_path, api, [lambda: "status"] * 5, grace=30)
    with pytest.raises(MissingResponseError):
        handoff.wait_for_response_file("t1", "analyst")
    assert clock.now >= 30


def test_timeout_holds_with_a_waiter(tmp_path: Path) -> None:
    api = Statuses(["processing"])
    handoff, clock, _, _ = _handoff(tmp_path, api, [], timeout=100)
    with pytest.raises(HandoffTimeout):
        handoff.wait_for_response_file("t1", "tester")
    assert 100 <= clock.now <= 102


# --- a server that never sees the CLI finish; an agent too quick to be seen working ---


def test_a_file_left_complete_while_processing_is_reported_then_taken(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    api = Statuses(["processing"])
    handoff, clock, _, log = _handoff(tmp_path, api, [_write(path, "SUMMARY")], grace=30)
    assert handoff.wait_for_response_file("t1", "analyst") == "SUMMARY"
    lines = [line for line in log.getvalue().splitlines() if "status detection likely" in line]
    assert len(lines) == 1
    assert "status detection likely does not recognise" in lines[0]
    assert "taking the file in 30s" in lines[0]
    assert "taking analyst_summary.md from analyst (terminal t1)" in log.getvalue()
    assert 60 <= clock.now <= 64  # 30 s unchanged, then a further IDLE_GRACE_SECONDS


def test_a_file_still_changing_is_not_taken_while_processing(tmp_path: Path) -> None:
    path = response_path_for("programmer", tmp_path)
    growing: list[Callable[[], str | None]] = [
        _write(path, "x" * (n + 1), wake=None) for n in range(60)
    ]
    api = Statuses(["processing"] * 61 + ["idle"])
    handoff, _, _, log = _handoff(tmp_path, api, growing, grace=30)
    assert handoff.wait_for_response_file("t1", "programmer") == "x" * 60
    assert "still reports" not in log.getvalue()
    assert api.reads == 62  # taken at rest, not before


def test_the_stuck_rule_waits_at_least_thirty_seconds_and_the_idle_grace(
    tmp_path: Path,
) -> None:
    path = response_path_for("tester", tmp_path)
    api = Statuses(["processing"])
    handoff, clock, _, _ = _handoff(tmp_path, api, [_write(path, "RESULT: PASS")], grace=50)
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"
    assert 100 <= clock.now <= 104


def test_idle_then_completed_counts_as_having_worked(tmp_path: Path) -> None:
    """Too quick to be seen processing: the idle grace starts at once, no startup guard."""
    api = Statuses(["idle", "completed"])
    handoff, clock, _, log = _handoff(tmp_path, api, [], grace=30)
    with pytest.raises(MissingResponseError):
        handoff.wait_for_response_file("t1", "analyst")
    assert "never showed it started" not in log.getvalue()
    assert 30 <= clock.now <= 34
