"""Qwen Code's session file: the last answer and the tokens spent, as the CLI recorded them.

Qwen Code 0.24 records each session as JSON lines in
`$QWEN_HOME/projects/<project>/chats/<session id>.jsonl` (the hooks name it as
`transcript_path`): `user` lines for typed prompts, `assistant` lines for the model's
messages (`message.parts`: text and function calls), `tool_result` lines, and `system`
lines. Among the latter, `ui_telemetry` lines carry one `qwen-code.api_response` event
per model request the session made — the main conversation's and its subagents' alike —
with its token counts: `input_token_count` (the whole prompt, its cached part included),
`cached_content_token_count`, `output_token_count` and `thoughts_token_count`.

Each request's `api_response` line comes just before the `assistant` line it produced, so
a turn is closed once its last `assistant` line calls no tool (or its request ended in an
`api_error`); Qwen writes these lines as it goes, and under load a moment after its
screen shows the turn done.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.usage import Usage

__all__ = ["transcript_last_answer", "transcript_usage"]

_API_RESPONSE = "qwen-code.api_response"
_API_ERROR = "qwen-code.api_error"
# Protocols whose output count leaves out the model's thoughts (Gemini's usage metadata);
# an OpenAI-compatible endpoint's completion tokens already include its reasoning.
_THOUGHTS_APART = ("gemini", "vertex-ai")


def _entries(transcript: Path) -> list[dict[str, Any]]:
    """The session file's lines that are JSON objects with a `type`."""
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


def _text(entry: dict[str, Any]) -> str:
    parts = (entry.get("message") or {}).get("parts")
    if not isinstance(parts, list):
        return ""
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    ]
    return "".join(texts).strip()


def transcript_last_answer(transcript: Path) -> str | None:
    """The text of the model's last message after the latest typed prompt, if any."""
    answer: str | None = None
    for entry in _entries(transcript):
        if entry["type"] == "user":
            answer = None
        elif entry["type"] == "assistant":
            answer = _text(entry) or answer
    return answer


def _count(event: dict[str, Any], name: str) -> int:
    value = event.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ui_event(entry: dict[str, Any]) -> str | None:
    event = (entry.get("systemPayload") or {}).get("uiEvent")
    name = event.get("event.name") if isinstance(event, dict) else None
    return name if isinstance(name, str) else None


def _calls_a_tool(entry: dict[str, Any]) -> bool:
    parts = (entry.get("message") or {}).get("parts")
    return isinstance(parts, list) and any(
        isinstance(part, dict) and "functionCall" in part for part in parts
    )


def _turn_closed(entries: list[dict[str, Any]]) -> bool:
    """Whether the latest turn has ended: its last message from the model calls no tool,
    or its last request failed (a tool call's result goes back to the model)."""
    for entry in reversed(entries):
        kind = entry["type"]
        if kind == "assistant":
            return not _calls_a_tool(entry)
        if kind == "user":
            return False
        if _ui_event(entry) == _API_ERROR:
            return True
    return False


def transcript_usage(transcript: Path) -> Usage | None:
    """The session's tokens: every model request's `api_response` event, summed, and
    whether the latest turn is closed (`complete`).

    None when the file records no model request yet.
    """
    entries = _entries(transcript)
    events = [
        entry["systemPayload"]["uiEvent"] for entry in entries if _ui_event(entry) == _API_RESPONSE
    ]
    if not events:
        return None
    model = next((e["model"] for e in reversed(events) if isinstance(e.get("model"), str)), None)
    output = sum(
        _count(e, "output_token_count")
        + (_count(e, "thoughts_token_count") if e.get("auth_type") in _THOUGHTS_APART else 0)
        for e in events
    )
    return Usage(
        input_tokens=sum(_count(e, "input_token_count") for e in events),
        cached_input_tokens=sum(_count(e, "cached_content_token_count") for e in events),
        output_tokens=output,
        model=model,
        complete=_turn_closed(entries),
    )
