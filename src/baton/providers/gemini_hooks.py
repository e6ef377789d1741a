"""Gemini CLI's hooks and session file as native signals: the recorder and the readers.

Gemini CLI 0.61 runs hook commands from its settings on lifecycle events, with the event
as JSON on stdin. The provider registers `python -I -S …/hook_recorder.py FILE` for
`SessionStart`, `BeforeAgent`, `AfterAgent` and `Notification`; each event becomes one
JSON line in FILE (the recorder prints nothing and always exits 0, since a hook's stdout
is read as a decision, and starts in milliseconds: see `hook_recorder`).

- `BeforeAgent` fires once per prompt the user submits (tool continuations share the
  prompt id and fire nothing); `AfterAgent` once that prompt's turn is over — answered,
  failed or cancelled with Esc. So the log tells whether the latest turn is open.
- Every event names the session (`session_id`, what `--resume` takes) and its transcript
  (`transcript_path`, a JSONL file whose `gemini` lines carry the answer text and the
  request's `tokens`: `input`, `cached`, `output`, `thoughts`, `tool`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from baton.providers.jsonl_tail import read_new_events
from baton.usage import Usage

__all__ = [
    "HOOK_EVENTS",
    "GeminiHookLog",
    "final_answer_since",
    "transcript_last_answer",
    "transcript_usage",
]

HOOK_EVENTS: tuple[str, ...] = ("SessionStart", "BeforeAgent", "AfterAgent", "Notification")
_SESSION_ID = re.compile(r"[0-9A-Za-z-]{8,64}")


@dataclass
class GeminiHookLog:
    """Incremental reader of the hook event file: only new complete lines are parsed."""

    path: Path
    _offset: int = 0
    _prompts: int = 0
    _sessions_started: int = 0
    _open: bool = False
    _opened_at: float | None = None
    _closes: int = 0
    _response: str | None = None
    _session: str | None = None
    _transcript: str | None = None

    def refresh(self) -> None:
        self._offset, events = read_new_events(self.path, self._offset)
        for event in events:
            self._add(event)

    def _add(self, event: dict[str, Any]) -> None:
        name = event.get("hook_event_name")
        if name == "SessionStart":
            self._sessions_started += 1
        elif name == "BeforeAgent":
            self._prompts += 1
            self._open = True
            self._opened_at = _timestamp(event.get("timestamp"))
        elif name == "AfterAgent":
            self._open = False
            self._closes += 1
            response = event.get("prompt_response")
            self._response = response if isinstance(response, str) else None
        # Each from the latest event that carries it.
        session = event.get("session_id")
        if isinstance(session, str) and _SESSION_ID.fullmatch(session):
            self._session = session
        transcript = event.get("transcript_path")
        if isinstance(transcript, str) and transcript:
            self._transcript = transcript

    def prompts(self) -> int:
        """How many prompts the CLI started a turn for."""
        self.refresh()
        return self._prompts

    def session_started(self) -> bool:
        """Whether the CLI finished initialising (`SessionStart` fires right after; a
        prompt submitted before it is only queued, and starts no turn until then)."""
        self.refresh()
        return bool(self._sessions_started or self._prompts)

    def is_open(self) -> bool | None:
        """Whether the latest prompt's turn is still running; None before any prompt."""
        self.refresh()
        return self._open if self._prompts else None

    def opened_at(self) -> float | None:
        """When the CLI fired the open turn's `BeforeAgent` (its own clock), if open."""
        self.refresh()
        return self._opened_at if self._open else None

    def last_response(self) -> str | None:
        """The finished turn's answer as `AfterAgent` gave it; None while a turn runs."""
        self.refresh()
        return None if self._open else self._response

    def session_id(self) -> str | None:
        self.refresh()
        return self._session

    def transcript_path(self) -> Path | None:
        self.refresh()
        return Path(self._transcript) if self._transcript else None


def _timestamp(value: Any) -> float | None:
    """Seconds since the epoch from the CLI's ISO 8601 time (`2026-11-25T04:25:14.126Z`)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def final_answer_since(transcript: Path, since: float, *, tail_bytes: int = 256 * 1024) -> bool:
    """Whether the session file's latest message is a final answer written after `since`.

    Gemini CLI writes the turn's final model message (text, no `toolCalls`) in the same
    millisecond it fires `AfterAgent`; the hook command is only recorded once a shell and
    Python have started, up to two seconds later on a loaded machine. Only the file's
    tail is read.
    """
    try:
        with transcript.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - tail_bytes))
            data = handle.read()
    except OSError:
        return False
    for raw in reversed(data.splitlines()):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            continue
        if entry["type"] != "gemini":
            return False  # a user message (a prompt, a tool result) or info came last
        written = _timestamp(entry.get("timestamp"))
        content = entry.get("content")
        return (
            written is not None
            and written >= since
            and not entry.get("toolCalls")
            and isinstance(content, str)
            and bool(content.strip())
        )
    return False


def _transcript_entries(transcript: Path) -> list[dict[str, Any]]:
    """The message lines of a session file (`$set` updates and the header skipped)."""
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for raw in lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("type"), str):
            entries.append(entry)
    return entries


def transcript_last_answer(transcript: Path) -> str | None:
    """The text of the model's last message after the latest user message, if any."""
    answer: str | None = None
    for entry in _transcript_entries(transcript):
        kind = entry["type"]
        if kind == "user":
            answer = None
        elif kind == "gemini":
            content = entry.get("content")
            if isinstance(content, str) and content.strip():
                answer = content.strip()
    return answer


def transcript_usage(transcript: Path) -> Usage | None:
    """The session's tokens: the `tokens` of every model message in the session file.

    `input` counts the whole prompt (its `cached` part included), as Baton does; the
    model's `thoughts` are billed as output, so they are counted there. None when no
    model message carries counts yet.
    """
    by_id: dict[str, dict[str, Any]] = {}
    model: str | None = None
    entries = _transcript_entries(transcript)
    for number, entry in enumerate(entries):
        tokens = entry.get("tokens")
        if entry["type"] != "gemini" or not isinstance(tokens, dict):
            continue
        # A message written again (updated) keeps its id: its last counts stand.
        by_id[str(entry.get("id") or f"line-{number}")] = tokens
        if isinstance(entry.get("model"), str):
            model = entry["model"]
    if not by_id:
        return None

    def count(tokens: dict[str, Any], name: str) -> int:
        value = tokens.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    counts = {
        "input": sum(count(t, "input") for t in by_id.values()),
        "cached": sum(count(t, "cached") for t in by_id.values()),
        "output": sum(count(t, "output") + count(t, "thoughts") for t in by_id.values()),
    }
    return Usage(
        input_tokens=counts["input"],
        cached_input_tokens=counts["cached"],
        output_tokens=counts["output"],
        model=model,
        complete=_turn_closed(entries),
    )


def _turn_closed(entries: list[dict[str, Any]]) -> bool | None:
    """Whether the latest turn is closed: its last line is the model's answer (text, no
    tool calls). A user line (a prompt, a tool's result) or tool calls: more is coming.
    None for a model message with neither text nor tool calls: Gemini CLI writes a
    message calling tools first without them, then again with them, so it cannot tell."""
    last = next((e for e in reversed(entries) if e["type"] in ("user", "gemini")), None)
    if last is None or last["type"] == "user" or last.get("toolCalls"):
        return False
    content = last.get("content")
    return True if isinstance(content, str) and content.strip() else None
