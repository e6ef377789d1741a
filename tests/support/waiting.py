"""One way for a test to wait for something: poll a condition until it holds.

A wait is a test step, never a timing assertion: the timeout only bounds a test that
would otherwise hang, and the failure says what never happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["poll", "wait_until"]

T = TypeVar("T")


def poll(condition: Callable[[], T], timeout: float = 30.0, *, interval: float = 0.05) -> T:
    """Call `condition` until it returns something truthy or `timeout` passes; its last value.

    For a step whose caller judges the outcome itself (a status to compare, a check that
    something did not happen). The condition is always called once more at the deadline.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_until(
    condition: Callable[[], T],
    timeout: float = 30.0,
    *,
    interval: float = 0.05,
    message: str = "condition never held",
) -> T:
    """Call `condition` until it returns something truthy, and return that.

    Raises AssertionError with `message` (and the last value seen) after `timeout`
    seconds. The condition is always called once more at the deadline, so a slow
    machine never fails a wait whose condition holds by then.
    """
    value = poll(condition, timeout, interval=interval)
    if not value:
        raise AssertionError(f"{message} within {timeout:g}s (last: {value!r})")
    return value
