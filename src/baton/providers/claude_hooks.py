"""Claude Code hooks as a native status signal: the recorder command and the log reader.

Claude Code runs hook commands on its own lifecycle events and hands each one the event
as JSON on stdin. The provider registers `python -m baton.providers.claude_hooks FILE`
for `UserPromptSubmit`, `Stop`, `StopFailure` and `Notification`; the command appends the
event as one JSON line to FILE in the terminal's runtime directory. `HookLog` reads that
file incrementally and answers one question: is the latest turn open, finished or failed?
Claude Code reports no end for a turn the user interrupts, so `baton serve` records one
itself (`INTERRUPT_EVENT`) when it presses the interrupt key on an open turn.

The recorder must never disturb the CLI: it prints nothing (a Stop hook's output could be
read as a decision) and always exits 0.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from baton.private import append_json_line
from baton.providers.jsonl_tail import read_new_events
from baton.usage import Usage

__all__ = [
    "HOOK_EVENTS",
    "INTERRUPT_EVENT",
    "HookLog",
    "TurnState",
    "append_event",
    "last_assistant_text",
    "last_session_id",
    "main",
    "transcript_usage",
]

HOOK_EVENTS: tuple[str, ...] = ("UserPromptSubmit", "Stop", "StopFailure", "Notification")
# Written by baton serve, not by Claude Code: the open turn was interrupted (Esc).
INTERRUPT_EVENT = "BatonInterrupt"


class TurnState(StrEnum):
    """The latest turn as the hooks tell it."""

    UNKNOWN = "unknown"  # no prompt recorded yet
    OPEN = "open"  # UserPromptSubmit with no Stop after it
    FINISHED = "finished"  # Stop after the latest UserPromptSubmit
    FAILED = "failed"  # StopFailure (an API error ended the turn)
    INTERRUPTED = "interrupted"  # interrupted: the hooks no longer say; the screen does


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the hook command; errors are swallowed so the CLI never sees one."""
    args = sys.argv[1:] if argv is None else argv
    try:
        raw = sys.stdin.read()
        if args:
            append_event(Path(args[0]), raw)
    except Exception:
        return 0
    return 0


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

    def refresh(self) -> None:
        self._offset, events = read_new_events(self.path, self._offset)
        for event in events:
            self._add(event)

    def _add(self, event: dict[str, Any]) -> None:
        self._sequence += 1
        event["_sequence"] = self._sequence
        name = event.get("hook_event_name")
        if name == "UserPromptSubmit":
            self._last_prompt = event
            self._prompts += 1
        elif name in ("Stop", "StopFailure", INTERRUPT_EVENT):
            self._last_close = event
        elif name == "Notification":
            self._last_notification = event

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

    def last_close(self) -> dict[str, Any] | None:
        """The latest Stop or StopFailure event, if it ends the latest turn."""
        if self.turn_state() in (TurnState.FINISHED, TurnState.FAILED):
            return self._last_close
        return None

    def transcript_path(self) -> Path | None:
        """The session transcript (JSONL) the CLI named in its latest event."""
        self.refresh()
        for event in (self._last_close, self._last_prompt):
            if event and isinstance(event.get("transcript_path"), str):
                return Path(event["transcript_path"])
        return None


def last_session_id(path: Path) -> str | None:
    """The `session_id` of the latest hook event in `path` (Claude's conversation id)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        session = event.get("session_id") if isinstance(event, dict) else None
        if isinstance(session, str) and re.fullmatch(r"[0-9A-Za-z-]{8,64}", session):
            return session
    return None


def last_assistant_text(transcript: Path) -> str:
    """The text of the last assistant message in a Claude Code session transcript."""
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for raw in reversed(lines):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        content = (entry.get("message") or {}).get("content")
        if isinstance(content, str) and content.strip():
            return content.strip()
        if isinstance(content, list):
            texts = [
                str(block.get("text", ""))
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            ]
            if any(text.strip() for text in texts):
                return "\n".join(texts).strip()
    return ""


def transcript_usage(transcript: Path) -> Usage | None:
    """The session's tokens: the `usage` of every assistant message in the transcript.

    Claude Code writes one line per content block of a message, each with the message's
    usage, so each message id counts once (its last line). Prompt tokens are the fresh,
    cache-written and cache-read ones together; the cache reads are the cached part.
    None when the transcript has no assistant message with usage.
    """
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    by_message: dict[str, dict[str, Any]] = {}
    model: str | None = None
    for number, raw in enumerate(lines):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        message = entry.get("message") or {}
        usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict):
            continue
        by_message[str(message.get("id") or f"line-{number}")] = usage
        if isinstance(message.get("model"), str) and not message["model"].startswith("<"):
            model = message["model"]
    if not by_message:
        return None

    def count(usage: dict[str, Any], name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = sum(count(u, "cache_read_input_tokens") for u in by_message.values())
    prompt = sum(
        count(u, "input_tokens") + count(u, "cache_creation_input_tokens")
        for u in by_message.values()
    )
    return Usage(
        input_tokens=prompt + cached,
        cached_input_tokens=cached,
        output_tokens=sum(count(u, "output_tokens") for u in by_message.values()),
        model=model,
    )


if __name__ == "__main__":
    sys.exit(main())
