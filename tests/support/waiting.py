"""One way for a test to wait for something: poll a condition until it holds.

A wait is a test step, never a timing assertion: the timeout only bounds a test that
would otherwise hang, and the failure says what never happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_until"]

T = TypeVar("T")


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
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{message} within {timeout:g}s (last: {value!r})")
        time.sleep(interval)
