"""A moment's patience for a CLI's own records.

A CLI signals the end of a turn (a hook, a notify call, an escape sequence) a moment
before it has written the turn to its own files; an answer read right then waits for
them, briefly, rather than fall back to the screen the CLI is still drawing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["read_when_written"]

T = TypeVar("T")


def read_when_written(
    read: Callable[[], T],
    seconds: float,
    *,
    ready: Callable[[T], bool] = bool,
    interval: float = 0.05,
) -> T:
    """`read()` every `interval` until `ready` holds for its value or `seconds` have
    passed; the last value read (read once when `seconds` is 0)."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if ready(value) or time.monotonic() >= deadline:
            return value
        time.sleep(interval)
