"""OpenCode's own record of its turns, read from the lines Baton's plugin writes.

The plugin (`opencode_plugin.js`) runs inside the CLI and appends one JSON line per
event that matters (see its header). Verified against OpenCode 1.18.33:

- `baton.loaded` once the CLI's instance has loaded its plugins;
- `chat.message` once per prompt the CLI takes (tool steps add none), naming the session;
- `session.status` (`busy`, `retry`, `idle`) and `session.idle`: a turn ends when its
  session goes idle, answered, failed (a `session.error` came first) or interrupted
  (the message's error is `MessageAbortedError`);
- `session.created`: a session with a `parentID` is a subagent's (the `task` tool); its
  turns are not the terminal's, its tokens are;
- `message.updated`: each message as stored, assistant ones with `tokens`, `cost` and
  the model; `text.finished`: each finished text part of a message;
- `question.asked` / `question.replied` / `question.rejected`: the agent asks the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.providers.jsonl_tail import read_new_events
from baton.usage import Usage

__all__ = ["ABORTED", "OpenCodeEventLog", "TurnEnd"]

ABORTED = "MessageAbortedError"


@dataclass(frozen=True)
class TurnEnd:
    """How the latest turn ended: its error's name and text (None when answered)."""

    error: str | None = None
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.error is not None and self.error != ABORTED


@dataclass
class OpenCodeEventLog:
    """Incremental reader of the plugin's event file: only new complete lines are parsed."""

    path: Path
    _offset: int = 0
    _loaded: bool = False
    _prompts: int = 0
    _open: bool = False
    _session: str | None = None
    _prompt_message: str | None = None
    _children: set[str] = field(default_factory=set)
    _error: tuple[str, str] | None = None
    _end: TurnEnd | None = None
    _questions: set[str] = field(default_factory=set)
    # Assistant messages as last stored (id → info), in the order first seen.
    _messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Finished text parts of each message: message id → {part id: text}.
    _texts: dict[str, dict[str, str]] = field(default_factory=dict)

    def refresh(self) -> None:
        self._offset, events = read_new_events(self.path, self._offset)
        for event in events:
            self._add(event)

    def _add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        properties = event.get("properties")
        props: dict[str, Any] = properties if isinstance(properties, dict) else {}
        session = event.get("sessionID", props.get("sessionID"))
        if kind == "baton.loaded":
            self._loaded = True
        elif kind == "session.created":
            info = props.get("info")
            if isinstance(info, dict) and info.get("parentID") and isinstance(info.get("id"), str):
                self._children.add(info["id"])
        elif kind == "message.updated":
            self._message(props.get("info"))
        elif kind == "text.finished":
            self._text(event)
        elif kind in ("question.asked", "question.replied", "question.rejected"):
            self._question(kind, props)
        elif not isinstance(session, str) or session in self._children:
            return
        elif kind == "chat.message":
            self._prompts += 1
            self._open = True
            self._session = session
            message = event.get("messageID")
            self._prompt_message = message if isinstance(message, str) else None
            self._error, self._end = None, None
        elif kind == "session.error":
            error = props.get("error")
            if isinstance(error, dict):
                self._error = (str(error.get("name") or "Error"), _error_text(error))
        elif kind == "session.idle" or (
            kind == "session.status" and (props.get("status") or {}).get("type") == "idle"
        ):
            self._idle(session)

    def _idle(self, session: str) -> None:
        if not self._open or session != self._session:
            return
        self._open = False
        error = self._error or self._message_error()
        self._end = TurnEnd(*error) if error else TurnEnd()

    def _message(self, info: Any) -> None:
        if not isinstance(info, dict) or info.get("role") != "assistant":
            return
        identifier = info.get("id")
        if isinstance(identifier, str):
            self._messages[identifier] = info

    def _text(self, event: dict[str, Any]) -> None:
        message, part, text = event.get("messageID"), event.get("partID"), event.get("text")
        if isinstance(message, str) and isinstance(part, str) and isinstance(text, str):
            self._texts.setdefault(message, {})[part] = text

    def _question(self, kind: str, props: dict[str, Any]) -> None:
        identifier = props.get("id", props.get("requestID"))
        if not isinstance(identifier, str):
            return
        if kind == "question.asked":
            self._questions.add(identifier)
        else:
            self._questions.discard(identifier)

    def _turn_messages(self) -> list[dict[str, Any]]:
        """The assistant messages answering the latest prompt, oldest first."""
        if self._prompt_message is None:
            return []
        return [m for m in self._messages.values() if m.get("parentID") == self._prompt_message]

    def _message_error(self) -> tuple[str, str] | None:
        for message in reversed(self._turn_messages()):
            error = message.get("error")
            if isinstance(error, dict):
                return str(error.get("name") or "Error"), _error_text(error)
        return None

    # -- what the provider asks --------------------------------------------------------------

    def loaded(self) -> bool:
        """Whether the CLI has loaded its plugins (its instance is up)."""
        self.refresh()
        return self._loaded

    def fresh(self) -> bool:
        """Whether the CLI is up and has taken no prompt yet."""
        self.refresh()
        return self._loaded and not self._prompts

    def prompts(self) -> int:
        """How many prompts the CLI started a turn for (subagents' excluded)."""
        self.refresh()
        return self._prompts

    def is_open(self) -> bool | None:
        """Whether the latest prompt's turn still runs; None before any prompt."""
        self.refresh()
        return self._open if self._prompts else None

    def answered(self) -> bool:
        """Whether the open turn's final answer is stored: its latest message finished for
        a reason other than a tool call (OpenCode ends the turn on it; the session goes
        idle a moment later, once the message and its parts are written)."""
        self.refresh()
        messages = self._turn_messages()
        if not self._open or not messages:
            return False
        last = messages[-1]
        time_info = last.get("time")
        completed = isinstance(time_info, dict) and bool(time_info.get("completed"))
        finish = last.get("finish")
        return (
            completed
            and isinstance(finish, str)
            and finish not in ("tool-calls", "unknown")
            and not last.get("error")
        )

    def turn_end(self) -> TurnEnd | None:
        """How the latest turn ended; None while it runs or before any."""
        self.refresh()
        return self._end

    def asking(self) -> bool:
        """Whether the agent waits for the user to answer a question."""
        self.refresh()
        return bool(self._questions)

    def session_id(self) -> str | None:
        """The session of the latest prompt (what `--session` takes)."""
        self.refresh()
        return self._session

    def last_answer(self) -> str | None:
        """The text of the latest prompt's last assistant message that has text."""
        self.refresh()
        for message in reversed(self._turn_messages()):
            parts = self._texts.get(str(message.get("id")), {})
            text = "\n\n".join(part.strip() for part in parts.values() if part.strip())
            if text:
                return text
        return None

    def usage(self) -> Usage | None:
        """Tokens and cost of every assistant message the CLI stored (subagents' included).

        OpenCode keeps a message's prompt tokens apart from its cache reads and writes and
        its output apart from its reasoning; Baton counts the whole prompt as input (the
        cache reads also as cached) and reasoning as output. None before any message.
        """
        self.refresh()
        if not self._messages:
            return None
        totals = {"input": 0, "cached": 0, "output": 0}
        cost = 0.0
        model: str | None = None
        for info in self._messages.values():
            raw = info.get("tokens")
            tokens: dict[str, Any] = raw if isinstance(raw, dict) else {}
            raw_cache = tokens.get("cache")
            cache: dict[str, Any] = raw_cache if isinstance(raw_cache, dict) else {}
            read, write = _count(cache, "read"), _count(cache, "write")
            totals["input"] += _count(tokens, "input") + read + write
            totals["cached"] += read
            totals["output"] += _count(tokens, "output") + _count(tokens, "reasoning")
            value = info.get("cost")
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                cost += float(value)
            if isinstance(info.get("modelID"), str):
                model = info["modelID"]
        return Usage(
            input_tokens=totals["input"],
            cached_input_tokens=totals["cached"],
            output_tokens=totals["output"],
            model=model,
            cost_usd=cost if cost > 0 else None,
        )


def _count(values: dict[str, Any], name: str) -> int:
    value = values.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _error_text(error: dict[str, Any]) -> str:
    data = error.get("data")
    message = data.get("message") if isinstance(data, dict) else None
    return str(message) if message else str(error.get("name") or "error")
