"""Claude Code hooks as a native status signal: the events it records, and their readers.

Claude Code runs hook commands on its own lifecycle events and hands each one the event
as JSON on stdin. The provider registers the standard-library recorder
(`hook_recorder.py`, run with `python -I -S` as the other CLIs' hooks are) for
`UserPromptSubmit`, `Stop`, `StopFailure` and `Notification`; it appends the event as one
JSON line to FILE in the terminal's runtime directory, prints nothing (a Stop hook's
output could be read as a decision) and always exits 0. Claude Code waits for both the
prompt's and the turn's end hook, so the recorder's start is on every handoff's path.
`HookLog` (in `turn_hooks`, shared with Qwen Code, whose hooks are the same) reads that
file incrementally and answers one question: is the latest turn open, finished or
failed? Claude Code reports no end for a turn the user interrupts, so `baton serve`
records one itself (`INTERRUPT_EVENT`) when it presses the interrupt key on an open turn.
This module also reads the session transcript the events name (last answer, usage).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.providers.turn_hooks import (
    INTERRUPT_EVENT,
    HookLog,
    TurnState,
    append_event,
)
from baton.usage import Usage

__all__ = [
    "HOOK_EVENTS",
    "INTERRUPT_EVENT",
    "HookLog",
    "TurnState",
    "append_event",
    "last_assistant_text",
    "transcript_usage",
]

HOOK_EVENTS: tuple[str, ...] = ("UserPromptSubmit", "Stop", "StopFailure", "Notification")


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
    `complete` when the last message's stop reason closes the turn (not `tool_use`).
    None when the transcript has no assistant message with usage.
    """
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    by_message: dict[str, dict[str, Any]] = {}
    model: str | None = None
    last_stop: object = None
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
        last_stop = message.get("stop_reason")
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
        complete=_turn_closed(last_stop),
    )


# How a message that ends its turn stops; `tool_use` and `pause_turn` go on with another.
_CLOSING_STOPS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})
_CONTINUING_STOPS = frozenset({"tool_use", "pause_turn"})


def _turn_closed(stop_reason: object) -> bool | None:
    """Whether the last message closed its turn; None when its stop reason is not written
    (a version that leaves it out of the transcript)."""
    if stop_reason in _CLOSING_STOPS:
        return True
    if stop_reason in _CONTINUING_STOPS:
        return False
    return None
