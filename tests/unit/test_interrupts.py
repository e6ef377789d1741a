"""SignalGuard: signals become RunInterrupted, held inside critical blocks."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator

import pytest

from baton.errors import BatonError, RunInterrupted
from baton.orchestrator.handoff_status import report_status
from baton.orchestrator.interrupts import SignalGuard
from baton.orchestrator.runlog import RunLog
from baton.roles import ROLES


@pytest.fixture
def guard() -> Iterator[SignalGuard]:
    guard = SignalGuard()
    guard.install()
    yield guard
    guard.restore()


def test_signal_raises_run_interrupted(guard: SignalGuard) -> None:
    with pytest.raises(RunInterrupted) as raised:
        os.kill(os.getpid(), signal.SIGTERM)
    assert raised.value.signum == signal.SIGTERM


def test_signal_is_held_until_the_critical_block_ends(guard: SignalGuard) -> None:
    steps = []
    with pytest.raises(RunInterrupted) as raised, guard.critical():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("finished the block")
    assert steps == ["finished the block"]
    assert raised.value.signum == signal.SIGINT


def test_second_signal_stops_at_once(guard: SignalGuard) -> None:
    steps = []
    with pytest.raises(RunInterrupted), guard.critical():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("first held")
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("never reached")
    assert steps == ["first held"]


def test_restore_puts_back_the_previous_handlers() -> None:
    before = signal.getsignal(signal.SIGINT)
    guard = SignalGuard()
    guard.install()
    assert signal.getsignal(signal.SIGINT) is not before
    guard.restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_signal_inside_an_error_handler_still_stops_the_run(guard: SignalGuard) -> None:
    """A stop that lands in a status record must not become 'cannot record the status'."""
    warnings = io.StringIO()

    def recording_status(*_args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the batch stops its loops with SIGTERM

    with pytest.raises(RunInterrupted) as raised:
        report_status(recording_status, RunLog(warnings), ROLES[0], "t1", "processing", "idle")
    assert raised.value.signum == signal.SIGTERM
    assert "cannot record" not in warnings.getvalue()


def test_a_stop_is_no_error_of_the_run() -> None:
    """`except Exception` and `except BatonError` are for errors; a stop passes through."""
    assert not issubclass(RunInterrupted, Exception)
    assert not issubclass(RunInterrupted, BatonError)
