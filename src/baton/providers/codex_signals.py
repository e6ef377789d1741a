"""What Codex says about itself, besides its screen.

Three native records, as Codex 0.169 writes them:

- `OSC 7501`: `ESC ] 7501 ; state=<idle|working|done>:app=codex ESC \\` in the pane's byte
  stream (`<runtime dir>/pane.log`). `working` when a turn starts, `done` when it ends
  (it stays until the next turn), `idle` at startup. `PaneStateReader` keeps its place
  in the log and reads only what was appended since the last poll.
- the `notify` program, run at the end of every turn with one JSON argument
  (`agent-turn-complete`: `thread-id`, `turn-id`, `input-messages`,
  `last-assistant-message`). `baton.providers.codex_notify` appends each payload to
  `<runtime dir>/codex-notify.jsonl`. Codex also notifies for its side thread that
  writes the session title; those payloads are recognised and skipped.
- session logs `CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` with
  `task_started` / `task_complete` (`last_agent_message`) / `turn_aborted`, the model in
  each `turn_context`, and after every model response a `token_count` event whose
  `info.total_token_usage` is the thread's cumulative count. They carry no
  terminal identity (five terminals may share one working directory), so the rollout of
  a terminal is found by the thread id its notify payload names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.providers.codex_notify import NOTIFY_FILE
from baton.usage import Usage

__all__ = [
    "NOTIFY_FILE",
    "PaneStateReader",
    "codex_home",
    "last_notify",
    "rollout_last_message",
    "rollout_usage",
]

_OSC_STATE = re.compile(rb"\x1b\]7501;state=([a-z_]+)(?::[^\x07\x1b]*)?(?:\x07|\x1b\\)")
# An OSC 7501 sequence is short: re-reading this much of what was read before catches
# one that was split across two polls.
_OVERLAP = 128
# When the log grew by more than this since the last poll, only its end is read: the
# latest state is all that matters.
_MAX_READ = 1 << 20
_TITLE_REQUEST = "Generate a concise, single-line task title"


@dataclass
class _LogPlace:
    offset: int = 0
    state: str | None = None
    # How many times the state became `working` (a turn started) in the log read so far.
    turns: int = 0


class PaneStateReader:
    """The latest `OSC 7501` state in a growing pane log, read incrementally."""

    def __init__(self) -> None:
        self._places: dict[Path, _LogPlace] = {}

    def state(self, pane_log: Path) -> str | None:
        """`idle`, `working`, `done` (or another word Codex sends); None when never seen."""
        place = self._places.setdefault(pane_log, _LogPlace())
        try:
            size = pane_log.stat().st_size
        except OSError:
            return place.state
        if size < place.offset:
            # The log was rotated (emptied in place at its size limit): read it from its
            # start; the last state seen stays the latest until the CLI sends a new one.
            place.offset = 0
        if size == place.offset:
            return place.state
        start = max(place.offset - _OVERLAP, size - _MAX_READ, 0)
        try:
            with pane_log.open("rb") as handle:
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            return place.state
        for match in _OSC_STATE.finditer(data):
            if match.end() <= place.offset - start:
                continue  # seen in the previous read (the overlap)
            state = match.group(1).decode("ascii")
            if state == "working" and place.state != "working":
                place.turns += 1
            place.state = state
        place.offset = start + len(data)
        return place.state

    def turns(self, pane_log: Path) -> tuple[int, str] | None:
        """(turns started, latest state) from the log; None while no state was seen."""
        state = self.state(pane_log)
        place = self._places[pane_log]
        return (place.turns, state) if state is not None else None


def codex_home(environment: Mapping[str, str]) -> Path:
    """The Codex home a CLI with `environment` uses: `$CODEX_HOME`, else `$HOME/.codex`."""
    value = environment.get("CODEX_HOME")
    if value:
        return Path(value).expanduser()
    home = environment.get("HOME")
    return (Path(home) if home else Path.home()) / ".codex"


def _is_title_thread(payload: dict[str, Any]) -> bool:
    messages = payload.get("input-messages") or []
    return bool(messages) and str(messages[0]).startswith(_TITLE_REQUEST)


def last_notify(runtime_dir: Path) -> dict[str, Any] | None:
    """The latest turn-complete payload of the terminal's own thread, if any."""
    path = runtime_dir / NOTIFY_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            payload = json.loads(line)
        except ValueError:
            continue
        if isinstance(payload, dict) and not _is_title_thread(payload):
            return payload
    return None


def _rollout_file(home: Path, thread_id: str) -> Path | None:
    if not re.fullmatch(r"[0-9A-Za-z-]{8,64}", thread_id):
        return None
    candidates = sorted((home / "sessions").glob(f"*/*/*/rollout-*-{thread_id}.jsonl"))
    return candidates[-1] if candidates else None


_TASK_EDGES = ("task_started", "task_complete")
_USAGE_LINES = ("token_count", "turn_context", *_TASK_EDGES)


def _rollout_entries(home: Path, thread_id: str, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The thread's rollout lines that name one of `kinds` (`"kind"` anywhere on the line),
    parsed, in order; empty when there is no log for the thread or it cannot be read."""
    path = _rollout_file(home, thread_id)
    if path is None:
        return []
    needles = [f'"{kind}"' for kind in kinds]
    entries: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if not any(needle in line for needle in needles):
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict):
                    entries.append(entry)
    except OSError:
        return []
    return entries


def rollout_usage(home: Path, thread_id: str) -> Usage | None:
    """The thread's cumulative tokens (latest `token_count`), model (latest turn context),
    and whether its latest task has finished (`complete`: a `task_complete` after its
    `task_started`; Codex logs the task's last `token_count` before it).

    None when there is no log for the thread or it has no token count yet.
    """
    totals: dict[str, Any] | None = None
    model: str | None = None
    finished: bool | None = None
    for entry in _rollout_entries(home, thread_id, _USAGE_LINES):
        kind, payload = entry.get("type"), entry.get("payload") or {}
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif payload.get("type") in _TASK_EDGES:
            finished = payload["type"] == "task_complete"
        elif payload.get("type") == "token_count":
            info = payload.get("info") or {}
            if isinstance(info.get("total_token_usage"), dict):
                totals = info["total_token_usage"]
    if totals is None:
        return None
    return Usage.from_json(
        {
            "input_tokens": totals.get("input_tokens", 0),
            "cached_input_tokens": totals.get("cached_input_tokens", 0),
            "output_tokens": totals.get("output_tokens", 0),
            "model": model,
            "complete": finished,
        }
    )


def rollout_last_message(home: Path, thread_id: str) -> str | None:
    """`last_agent_message` of the thread's latest task, from its rollout log.

    None when there is no log for the thread or its latest task has not finished.
    """
    message: str | None = None
    for entry in _rollout_entries(home, thread_id, _TASK_EDGES):
        payload = entry.get("payload") or {}
        if payload.get("type") == "task_started":
            message = None
        elif payload.get("type") == "task_complete":
            message = payload.get("last_agent_message")
    return message
