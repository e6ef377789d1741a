"""`Awaiting`: the prompt a run recorded as going out, saved just before it is typed.

It decides what a resumed run does with that prompt (take its answer, wait for it, or send
it again), so it is a typed record rather than a bag of strings. The state file keeps the
shape it always had: every value a string, `agent_restarted` as "1", `stalls` as digits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Awaiting"]

_KNOWN = ("role", "terminal_id", "sent_at", "prompt_file", "stalls", "agent_restarted")
_TIMED_OUT = "timed_out_at"


@dataclass
class Awaiting:
    """One prompt recorded as going out: to whom, when, and what happened to it since."""

    role: str  # the role's output key
    terminal_id: str
    sent_at: str = ""
    prompt_file: str | None = None  # the archived copy of the prompt
    stalls: int = 0  # stall restarts already spent on this turn; a rerun escalates from here
    agent_restarted: bool = False  # the agent was replaced: the prompt goes out again
    timed_out_at: str | None = None  # RESPONSE_TIMEOUT ran out while waiting for it
    extra: dict[str, str] = field(default_factory=dict)  # keys a newer Baton wrote

    @classmethod
    def from_json(cls, value: Any) -> Awaiting | None:
        """The record a state file holds; None when it is absent or lacks role/terminal."""
        if not isinstance(value, Mapping):
            return None
        strings = {key: item for key, item in value.items() if isinstance(item, str)}
        role, terminal_id = strings.get("role"), strings.get("terminal_id")
        if role is None or terminal_id is None:
            return None
        return cls(
            role=role,
            terminal_id=terminal_id,
            sent_at=strings.get("sent_at", ""),
            prompt_file=strings.get("prompt_file") or None,
            stalls=_count(strings.get("stalls")),
            agent_restarted=bool(strings.get("agent_restarted")),
            timed_out_at=strings.get(_TIMED_OUT) or None,
            extra={k: v for k, v in strings.items() if k not in (*_KNOWN, _TIMED_OUT)},
        )

    def to_json(self) -> dict[str, str]:
        """The state file's shape: strings only, optional keys left out when unset."""
        document = {**self.extra, "role": self.role, "terminal_id": self.terminal_id}
        if self.sent_at:
            document["sent_at"] = self.sent_at
        if self.prompt_file:
            document["prompt_file"] = self.prompt_file
        if self.stalls:
            document["stalls"] = str(self.stalls)
        if self.agent_restarted:
            document["agent_restarted"] = "1"
        if self.timed_out_at:
            document[_TIMED_OUT] = self.timed_out_at
        return document


def _count(value: str | None) -> int:
    """A count kept as digits; 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0
