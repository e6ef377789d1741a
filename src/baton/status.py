"""The five terminal status values shared by the server, the providers and the orchestrator."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TerminalStatus", "parse_status"]


class TerminalStatus(StrEnum):
    """What a person looking at the agent's terminal would say it is doing."""

    IDLE = "idle"  # prompt shown, no answer yet in this conversation
    PROCESSING = "processing"  # working on a turn
    COMPLETED = "completed"  # prompt shown after an answer
    WAITING_USER_ANSWER = "waiting_user_answer"  # a permission or choice dialog is open
    ERROR = "error"  # the CLI failed or exited

    @property
    def is_at_rest(self) -> bool:
        """True when the agent shows its prompt and waits for new input."""
        return self in (TerminalStatus.IDLE, TerminalStatus.COMPLETED)


def parse_status(value: object) -> TerminalStatus | None:
    """The status a server sent, or None for anything that is not one of the five."""
    if not isinstance(value, str):
        return None
    try:
        return TerminalStatus(value)
    except ValueError:
        return None
