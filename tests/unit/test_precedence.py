"""The one signal-precedence rule both native-signal providers use."""

from __future__ import annotations

import pytest

from baton.providers.precedence import NativeTurn, combine_signals
from baton.status import TerminalStatus

IDLE, PROCESSING, COMPLETED = (
    TerminalStatus.IDLE,
    TerminalStatus.PROCESSING,
    TerminalStatus.COMPLETED,
)
WAITING, ERROR = TerminalStatus.WAITING_USER_ANSWER, TerminalStatus.ERROR
OPEN, FINISHED, FAILED, UNKNOWN = (
    NativeTurn.OPEN,
    NativeTurn.FINISHED,
    NativeTurn.FAILED,
    NativeTurn.UNKNOWN,
)


@pytest.mark.parametrize("native", list(NativeTurn))
@pytest.mark.parametrize("seen", [WAITING, ERROR])
def test_a_dialog_or_an_error_on_screen_wins(seen: TerminalStatus, native: NativeTurn) -> None:
    assert combine_signals(seen, native, screen_shows_end=True) is seen


@pytest.mark.parametrize("seen", [IDLE, COMPLETED, PROCESSING])
def test_an_open_turn_wins_over_the_screen(seen: TerminalStatus) -> None:
    assert combine_signals(seen, OPEN) is PROCESSING
    # …except an interruption the screen shows: the CLI reports no end for it.
    assert combine_signals(seen, OPEN, screen_shows_interrupt=True) is seen


@pytest.mark.parametrize(("native", "finished"), [(FINISHED, COMPLETED), (FAILED, ERROR)])
def test_a_finished_turn(native: NativeTurn, finished: TerminalStatus) -> None:
    assert combine_signals(PROCESSING, native, screen_shows_end=True) is finished
    assert combine_signals(PROCESSING, native, screen_shows_end=False) is PROCESSING
    assert combine_signals(IDLE, native) is finished
    assert combine_signals(COMPLETED, native) is finished
    # A signal that may belong to the previous turn leaves a resting screen alone.
    assert combine_signals(IDLE, native, finish_is_current=False) is IDLE
    assert combine_signals(COMPLETED, native, finish_is_current=False) is COMPLETED


@pytest.mark.parametrize("seen", list(TerminalStatus))
def test_without_a_signal_the_screen_decides(seen: TerminalStatus) -> None:
    assert combine_signals(seen, UNKNOWN, screen_shows_end=True) is seen
