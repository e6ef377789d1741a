"""The prompt-and-stop hooks Claude Code and Qwen Code share, read as a turn signal.

Both CLIs run hook commands on the same lifecycle events, with the event as JSON on
stdin: `UserPromptSubmit` before a prompt's model request, `Stop` once its turn is over,
`StopFailure` instead when an API error ended it. Baton records each event as one JSON
line in the terminal's runtime directory; `HookLog` reads that file incrementally and
answers one question: is the latest turn open, finished or failed?

Neither CLI reports an end for a turn the user interrupts, so `baton serve` records one
itself (`INTERRUPT_EVENT`) when it presses the interrupt key on an open turn. Qwen Code
also fires `UserPromptSubmit` before every later model request of the same turn (after a
tool result), with the prompt's `prompt_id` and an empty prompt: such an event continues
the turn and is not counted as a new prompt.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from baton.private import append_json_line
from baton.providers.jsonl_tail import read_new_events
from baton.providers.precedence import NativeTurn

__all__ = [
    "INTERRUPT_EVENT",
    "HookLog",
    "TurnState",
    "append_event",
    "interrupt_open_turn",
    "native_turn",
]

# Written by baton serve, not by the CLI: the open turn was interrupted (Esc).
INTERRUPT_EVENT = "BatonInterrupt"
_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")


class TurnState(StrEnum):
    """The latest turn as the hooks tell it."""

    UNKNOWN = "unknown"  # no prompt recorded yet
    OPEN = "open"  # UserPromptSubmit with no Stop after it
    FINISHED = "finished"  # Stop after the latest UserPromptSubmit
    FAILED = "failed"  # StopFailure (an API error ended the turn)
    INTERRUPTED = "interrupted"  # interrupted: the hooks no longer say; the screen does


_NATIVE = {
    TurnState.OPEN: NativeTurn.OPEN,
    TurnState.FINISHED: NativeTurn.FINISHED,
    TurnState.FAILED: NativeTurn.FAILED,
}


def native_turn(state: TurnState) -> NativeTurn:
    """What the hooks say of the latest turn, as the signal precedence reads it."""
    return _NATIVE.get(state, NativeTurn.UNKNOWN)


def append_event(path: Path, raw: str) -> None:
    """Append one event (stdin text) to `path` as a single JSON line, in one write."""
    try:
        event = json.loads(raw) if raw.strip() else {}
    except ValueError:
        event = {"raw": raw}
    if not isinstance(event, dict):
        event = {"raw": event}
    event["baton_time"] = time.time()
    append_json_line(path, event)


@dataclass
class HookLog:
    """Incremental reader of the hook event file: only new complete lines are parsed."""

    path: Path
    _offset: int = 0
    _last_prompt: dict[str, Any] | None = field(default=None, repr=False)
    _last_close: dict[str, Any] | None = field(default=None, repr=False)
    _last_notification: dict[str, Any] | None = field(default=None, repr=False)
    _sequence: int = 0
    _prompts: int = 0
    _sessions_started: int = 0
    _session: str | None = None

    def refresh(self) -> None:
        self._offset, events = read_new_events(self.path, self._offset)
        for event in events:
            self._add(event)

    def _add(self, event: dict[str, Any]) -> None:
        self._sequence += 1
        event["_sequence"] = self._sequence
        name = event.get("hook_event_name")
        if name == "UserPromptSubmit":
            if not _continues(self._last_prompt, event):
                self._prompts += 1
            self._last_prompt = event
        elif name in ("Stop", "StopFailure", INTERRUPT_EVENT):
            self._last_close = event
        elif name == "Notification":
            self._last_notification = event
        elif name == "SessionStart":
            self._sessions_started += 1
        session = event.get("session_id")
        if isinstance(session, str) and _SESSION_ID.fullmatch(session):
            self._session = session

    def turn_state(self) -> TurnState:
        self.refresh()
        if self._last_prompt is None:
            return TurnState.UNKNOWN
        close = self._last_close
        if close is None or close["_sequence"] < self._last_prompt["_sequence"]:
            return TurnState.OPEN
        name = close.get("hook_event_name")
        if name == INTERRUPT_EVENT:
            return TurnState.INTERRUPTED
        return TurnState.FAILED if name == "StopFailure" else TurnState.FINISHED

    def prompts(self) -> int:
        """How many prompts the CLI submitted (`UserPromptSubmit` events) so far."""
        self.refresh()
        return self._prompts

    def session_started(self) -> bool:
        """Whether the CLI reported its session (`SessionStart`) or took a prompt."""
        self.refresh()
        return bool(self._sessions_started or self._prompts)

    def session_id(self) -> str | None:
        """The `session_id` the latest event carried (what `--resume` takes)."""
        self.refresh()
        return self._session

    def last_close(self) -> dict[str, Any] | None:
        """The latest Stop or StopFailure event, if it ends the latest turn."""
        if self.turn_state() in (TurnState.FINISHED, TurnState.FAILED):
            return self._last_close
        return None

    def last_prompt(self) -> dict[str, Any] | None:
        """The latest `UserPromptSubmit` event (a continuation's, within a turn)."""
        self.refresh()
        return self._last_prompt

    def transcript_path(self) -> Path | None:
        """The session transcript (JSONL) the CLI named in its latest event."""
        self.refresh()
        for event in (self._last_close, self._last_prompt):
            if event and isinstance(event.get("transcript_path"), str):
                return Path(event["transcript_path"])
        return None


def interrupt_open_turn(log: HookLog) -> None:
    """Record the end the CLI never reports for an interrupted turn, if one is open."""
    if log.turn_state() is TurnState.OPEN:
        append_event(log.path, json.dumps({"hook_event_name": INTERRUPT_EVENT}))


def _continues(previous: dict[str, Any] | None, event: dict[str, Any]) -> bool:
    """A `UserPromptSubmit` for the prompt already submitted (its model request after a
    tool result): it carries that prompt's `prompt_id` and no text of its own.

    The text decides too: Claude Code can hand a prompt typed just as a turn ends the
    ended turn's `prompt_id`, and that prompt is still a new one.
    """
    if previous is None:
        return False
    text = event.get("prompt")
    if isinstance(text, str) and text.strip():
        return False
    prompt_id = event.get("prompt_id")
    return isinstance(prompt_id, str) and bool(prompt_id) and prompt_id == previous.get("prompt_id")
