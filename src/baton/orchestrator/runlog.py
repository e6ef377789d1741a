"""Timestamped progress lines on stderr, so a person can follow a run as it happens.

`RunLog` is the orchestrator's face on stdlib logging (`baton.logs`): its records go to
the `baton.run` logger and print as `[HH:MM:SS] baton: message`.
"""

from __future__ import annotations

import logging
from typing import TextIO

from baton.logs import PREFIX_FIELD, RUN_LOGGER, STREAM_FIELD, log_to_stderr

__all__ = ["RunLog", "format_duration"]


class RunLog:
    """Writes `[HH:MM:SS] baton: message` lines; warnings carry a `warning:` prefix.

    `stream` (stderr when None) and `prefix` travel with each record, so runs that print
    to different places (the demo, tests) share the one `baton.run` logger.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        prefix: str = "baton",
        logger: logging.Logger | None = None,
    ) -> None:
        self.logger = logger or log_to_stderr(RUN_LOGGER)
        self._extra = {STREAM_FIELD: stream, PREFIX_FIELD: prefix}

    def info(self, message: str) -> None:
        self.logger.info(message, extra=self._extra)

    def warning(self, message: str) -> None:
        self.logger.warning(message, extra=self._extra)


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
