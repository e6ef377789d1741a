"""Reading a hook log as it grows: the whole JSON lines added since the last read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_new_events"]


def read_new_events(path: Path, offset: int) -> tuple[int, list[dict[str, Any]]]:
    """The objects on the complete lines after `offset`, and the offset after them.

    A line still being written (no newline yet) is left for the next read; a line that
    is not a JSON object is skipped; an unreadable file reads as nothing new.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset, []
    end = data.rfind(b"\n")
    if end < 0:
        return offset, []
    events = []
    for raw in data[: end + 1].splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return offset + end + 1, events
