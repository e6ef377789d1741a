"""Timestamped progress lines on stderr, so a person can follow a run as it happens."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TextIO

__all__ = ["RunLog", "format_duration"]


class RunLog:
    """Writes `HH:MM:SS message` lines; warnings carry a `warning:` prefix."""

    def __init__(self, stream: TextIO | None = None, *, prefix: str = "baton") -> None:
        self._stream = stream
        self._prefix = prefix

    @property
    def stream(self) -> TextIO:
        # Resolved on each write so a redirected sys.stderr (pytest, demo) is honoured.
        return self._stream if self._stream is not None else sys.stderr

    def info(self, message: str) -> None:
        self._write(message)

    def warning(self, message: str) -> None:
        self._write(f"warning: {message}")

    def _write(self, message: str) -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        try:
            self.stream.write(f"[{stamp}] {self._prefix}: {message}\n")
            self.stream.flush()
        except (OSError, ValueError):  # closed or broken stderr must not end the run
            pass


def format_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m` — short enough for a progress line."""
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f}s" if seconds < 10 and seconds != whole else f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
