"""The run record: one JSON object per line in `<archive>/events.jsonl`, appended as it happens.

Views (`baton watch`, `baton status`), the report and the notifications read this log
and the state file instead of re-deriving what happened, so they work the same for a
running run, a finished one, and one driven against a stock `cao-server`.

Every line has `ts` (ISO-8601 UTC with milliseconds), `event` (a name from `EventKind`)
and the fields of that event; docs/events.md lists them. A line is written with one
`write` on an `O_APPEND` descriptor, so concurrent readers never see half a line and a
crash loses at most the line being written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

__all__ = ["EVENTS_FILE_NAME", "EventKind", "EventListener", "RunEvents", "read_events"]

EVENTS_FILE_NAME = "events.jsonl"


class EventKind(StrEnum):
    """The names an event line may carry (docs/events.md has each one's fields)."""

    RUN_START = "run_start"
    RUN_RESUME = "run_resume"
    RUN_END = "run_end"
    PROMPT_SENT = "prompt_sent"
    STATUS = "status"
    ANSWER = "answer"
    GATE = "gate"
    VERDICT = "verdict"
    REMINDER = "reminder"
    AGENT_RESTART = "agent_restart"
    STALL = "stall"
    WAITING = "waiting"
    TOKENS = "tokens"
    BUDGET = "budget"
    ERROR = "error"
    GIT_START = "git_start"
    GIT_COMMIT = "git_commit"
    SERVER_DOWN = "server_down"
    SERVER_STILL_DOWN = "server_still_down"
    SERVER_BACK = "server_back"


# Called with each event's record after it is logged (the notifier subscribes this way).
EventListener = Callable[[dict[str, Any]], None]


class RunEvents:
    """Appends events to one run's log; a run without an archive yet writes nowhere.

    Listeners see every event, also those of a run without an archive yet, so whatever
    reacts to the run (notifications) sees exactly what the log records.
    """

    def __init__(self, directory: Path | None, listeners: Iterable[EventListener] = ()) -> None:
        self.path = Path(directory) / EVENTS_FILE_NAME if directory is not None else None
        self.listeners: list[EventListener] = list(listeners)

    def emit(self, kind: EventKind, **fields: Any) -> None:
        """Append one event and tell the listeners; neither ever stops the run."""
        record = {"ts": _now(), "event": kind.value, **fields}
        self._append(record)
        for listener in self.listeners:
            with contextlib.suppress(Exception):  # a listener's failure is its own business
                listener(dict(record))

    def _append(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(descriptor, line.encode("utf-8"))
            finally:
                os.close(descriptor)
        except OSError:
            pass


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a log, oldest first; a torn last line (a crash mid-write) is skipped."""
    if not Path(path).is_file():
        return
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                continue
            if isinstance(record, dict):
                yield record


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
