"""Copilot CLI's session file: how a turn ended, the last answer and the tokens spent.

Copilot CLI 1.0 records each session as JSON lines in
`$COPILOT_HOME/session-state/<session id>/events.jsonl` (the hooks name it as
`transcript_path`), every event `{"type", "data", "id", "timestamp", "parentId"}`:
`user.message` for a prompt taken, `assistant.message` for each model reply (`content`,
`toolRequests`), `session.usage_record` for each model call (`usage`: `model`,
`inputTokens` — the whole prompt, its cached part included — `cacheReadTokens`,
`outputTokens`), `session.error` when a turn failed (after the CLI's own retries),
`abort` when the user interrupted it, and `hook.start` for each hook it runs (`agentStop`
when the turn ends). The file is written a moment after the hooks run, so a reader that
a hook sent waits until the file has the turn's end too. A prompt cancelled before any
reply is taken back (rewound): the file is rewritten without it, so a reader that finds
it shorter or replaced starts again from its first line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from baton.usage import Usage

__all__ = ["SessionFile", "parse_time"]

_TURN_ENDS = {"session.error": "error", "abort": "abort"}


def parse_time(value: Any) -> float | None:
    """An event's ISO 8601 `timestamp` as POSIX seconds; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


@dataclass
class SessionFile:
    """Incremental reader of one session file: only lines added since the last read."""

    path: Path
    _identity: tuple[int, int] | None = None
    _offset: int = 0
    _answer: str | None = None
    _end: tuple[str, float] | None = None
    _stopped: bool = False
    _input: int = 0
    _cached: int = 0
    _output: int = 0
    _calls: int = 0
    _model: str | None = field(default=None)

    def refresh(self) -> None:
        try:
            with self.path.open("rb") as handle:
                stat = os.fstat(handle.fileno())
                identity = (stat.st_dev, stat.st_ino)
                if identity != self._identity or stat.st_size < self._offset:
                    self._restart(identity)
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        self._offset += end + 1
        for raw in data[: end + 1].splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict):
                self._add(event)

    def _restart(self, identity: tuple[int, int]) -> None:
        fresh = SessionFile(self.path)
        self.__dict__.update(fresh.__dict__)
        self._identity = identity

    def _add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        data = event.get("data")
        if not isinstance(data, dict):
            return
        if kind == "session.usage_record":  # a subagent's calls cost the same
            self._count(data.get("usage"))
        elif event.get("agentId"):
            return  # a subagent's own conversation
        elif kind == "user.message":
            self._answer, self._end, self._stopped = None, None, False
        elif kind == "hook.start" and data.get("hookType") == "agentStop":
            self._stopped = True
        elif kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content.strip():
                self._answer = content.strip()
        elif kind in _TURN_ENDS:
            self._end = (_TURN_ENDS[kind], parse_time(event.get("timestamp")) or 0.0)
            self._stopped = True

    def _count(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self._calls += 1
        self._input += _whole(usage.get("inputTokens"))
        self._cached += _whole(usage.get("cacheReadTokens"))
        self._output += _whole(usage.get("outputTokens"))
        if isinstance(usage.get("model"), str) and usage["model"]:
            self._model = usage["model"]

    def last_answer(self) -> str | None:
        """The main agent's last non-empty reply after the latest prompt, if any."""
        self.refresh()
        return self._answer

    def turn_stopped(self) -> bool:
        """Whether the file records the `Stop` hook after the latest prompt (so its
        answer for that prompt is complete)."""
        self.refresh()
        return self._stopped

    def turn_end(self, since: float) -> str | None:
        """`error` or `abort` when the latest prompt's turn ended so at or after `since`
        (POSIX seconds); None when it ended otherwise or not yet."""
        self.refresh()
        if self._end is not None and self._end[1] >= since:
            return self._end[0]
        return None

    def usage(self) -> Usage | None:
        """Every model call's tokens, summed, and whether the latest turn has ended
        (`complete`: its calls' records come before its `agentStop`); None before the
        first call."""
        self.refresh()
        if not self._calls:
            return None
        return Usage(
            input_tokens=self._input,
            cached_input_tokens=self._cached,
            output_tokens=self._output,
            model=self._model,
            complete=self._stopped,
        )


def _whole(value: Any) -> int:
    """A token count as an int (Copilot writes some as floats: `0.0`)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0
    return int(value)
