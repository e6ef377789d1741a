"""One logging path for both halves: stdlib `logging`, printed as people read it.

`baton run` reports progress through the `baton.run` logger and `baton serve` its
problems through `baton.server`; both print with `LineHandler` as one line per record,
`[HH:MM:SS] baton: message` (`warning: ` before a warning's message), on stderr. A run may
give its records a stream and a prefix of its own (`RunLog` does, for the demo and tests).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

__all__ = [
    "PREFIX_FIELD",
    "RUN_LOGGER",
    "SERVER_LOGGER",
    "STREAM_FIELD",
    "LineFormatter",
    "LineHandler",
    "log_to_stderr",
]

RUN_LOGGER = "baton.run"
SERVER_LOGGER = "baton.server"
# Record attributes a caller may set through `extra=`: where its line goes and its prefix.
STREAM_FIELD = "baton_stream"
PREFIX_FIELD = "baton_prefix"


class LineFormatter(logging.Formatter):
    """`[HH:MM:SS] <prefix>: message`; a warning or worse names its level first."""

    def __init__(self, prefix: str = "baton") -> None:
        super().__init__()
        self.prefix = prefix

    def formatMessage(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        prefix = getattr(record, PREFIX_FIELD, None) or self.prefix
        level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
        return f"[{stamp}] {prefix}: {level}{record.getMessage()}"


class LineHandler(logging.Handler):
    """Writes each record to its own stream, else to `sys.stderr` as it is at that moment
    (so a redirected stderr, as pytest and the demo do, is honoured)."""

    def __init__(self, prefix: str = "baton") -> None:
        super().__init__()
        self.setFormatter(LineFormatter(prefix))

    def emit(self, record: logging.LogRecord) -> None:
        stream: TextIO = getattr(record, STREAM_FIELD, None) or sys.stderr
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not end the run
            pass


def log_to_stderr(name: str, *, prefix: str = "baton") -> logging.Logger:
    """The logger `name`, printing INFO and above through one `LineHandler` (added once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(handler, LineHandler) for handler in logger.handlers):
        logger.addHandler(LineHandler(prefix))
    logger.setLevel(logging.INFO)
    logger.propagate = False  # printed here; a root handler would print it twice
    return logger
