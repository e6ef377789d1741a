"""The scripted agent's own record of its turns, as a real CLI's hooks would give it.

One JSON line per event in `<runtime dir>/turns.jsonl`: `ready` when the program starts
reading input, `received` when a message starts a turn (before anything is drawn), and
`finished` once the turn is over and the prompt is drawn again. The provider reads it to
know a message was taken as its own turn, and that the agent is back at its prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

from baton.private import append_json_line

__all__ = ["TURN_LOG", "read_turns", "record_turn"]

TURN_LOG = "turns.jsonl"


def record_turn(path: Path | None, event: str) -> None:
    """Append one event (`ready`, `received`, `finished`); nothing without a log."""
    if path is not None:
        append_json_line(path, {"event": event})


def read_turns(path: Path) -> tuple[int, bool] | None:
    """(messages received, a turn still open) since the program last started; None: no log."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    received, open_turn = 0, False
    for raw in lines:
        try:
            event = json.loads(raw).get("event")
        except (ValueError, AttributeError):
            continue
        if event == "ready":
            received, open_turn = 0, False
        elif event == "received":
            received, open_turn = received + 1, True
        elif event == "finished":
            open_turn = False
    return received, open_turn
