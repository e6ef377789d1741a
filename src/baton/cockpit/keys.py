"""Single keys from a terminal, without waiting for Enter: the input of the live views."""

from __future__ import annotations

import os
import select
import termios
import time
import tty
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["KeyReader", "split_keys"]


class KeyReader:
    """Single keys from a terminal without waiting for Enter (nothing when stdin is no tty)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.fd = stream.fileno() if stream.isatty() else None
        self._saved: list[Any] | None = None

    def __enter__(self) -> KeyReader:
        if self.fd is not None:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *_: object) -> None:
        if self.fd is not None and self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def read(self, timeout: float) -> str | None:
        """A key (an escape sequence as one string), or None after `timeout` seconds."""
        if self.fd is None:
            time.sleep(timeout)
            return None
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return None
        data = os.read(self.fd, 16).decode("utf-8", "replace")
        return data or None


def split_keys(data: str) -> Iterator[str]:
    """One read's keys, one by one; an escape sequence (an arrow, shift-Tab) as one key."""
    index = 0
    while index < len(data):
        if data[index] == "\x1b":
            end = index + 1
            while end < len(data) and not data[end].isalpha() and data[end] != "~":
                end += 1
            yield data[index : end + 1]
            index = end + 1
        else:
            yield data[index]
            index += 1
