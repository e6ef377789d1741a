"""InputQueue: senders to one terminal take turns in arrival order; refusals and timeouts."""

from __future__ import annotations

import threading
import time

import pytest

from baton.errors import InputQueueTimeoutError, TerminalBusyError
from baton.server.input_queue import InputQueue


def _far() -> float:
    return time.monotonic() + 60


def test_senders_go_one_at_a_time_in_arrival_order() -> None:
    queue = InputQueue()
    order: list[int] = []
    inside = threading.Semaphore(0)
    release = threading.Event()
    typing: list[int] = []
    together: list[int] = []

    def sender(number: int) -> None:
        with queue.first_in_line("t1", queue=True, deadline=_far()):
            typing.append(number)
            together.append(len(typing))
            order.append(number)
            inside.release()
            release.wait(10)
            typing.remove(number)

    threads = []
    for number in range(5):
        thread = threading.Thread(target=sender, args=(number,))
        thread.start()
        threads.append(thread)
        if number == 0:
            assert inside.acquire(timeout=10)  # the first holds the line
        else:
            time.sleep(0.05)  # arrive in a known order behind it
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]
    assert together == [1] * 5  # nobody else was typing meanwhile


def test_not_queueing_is_refused_while_anyone_is_in_line_and_other_terminals_are_free() -> None:
    queue = InputQueue()
    with queue.first_in_line("t1", queue=True, deadline=_far()):
        with (
            pytest.raises(TerminalBusyError, match="queue=false"),
            queue.first_in_line("t1", queue=False, deadline=_far()),
        ):
            pass
        with queue.first_in_line("t2", queue=False, deadline=_far()):
            pass
    with queue.first_in_line("t1", queue=False, deadline=_far()):
        pass


def test_a_sender_whose_wait_runs_out_leaves_the_line() -> None:
    queue = InputQueue()
    soon = time.monotonic() + 0.05
    with (
        queue.first_in_line("t1", queue=True, deadline=_far()),
        pytest.raises(InputQueueTimeoutError, match="nothing was typed"),
        queue.first_in_line("t1", queue=True, deadline=soon),
    ):
        pass
    # It left no ticket behind: the line is free again.
    with queue.first_in_line("t1", queue=False, deadline=_far()):
        pass
