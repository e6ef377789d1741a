"""The CAO API's JSON shapes, typed once for the server that writes them and the client.

`baton serve` builds these (its routes return them); `baton run`'s client reads them from
any CAO-compatible server, so the fields a stock `cao-server` lacks are `NotRequired`
there and the client checks the ones it needs (`id`, `session_name`, `status`).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = [
    "OutputJSON",
    "ProgressJSON",
    "SessionJSON",
    "SessionSummaryJSON",
    "TerminalJSON",
]


class ProgressJSON(TypedDict):
    """Baton's own fields on a terminal: when its screen or a native signal last changed."""

    last_change_at: str | None
    quiet_seconds: float | None


class TerminalJSON(TypedDict):
    """`GET /terminals/{id}` (and each terminal a session lists, and what creation returns)."""

    id: str
    name: str
    provider: str
    session_name: str
    agent_profile: str | None
    status: str  # a TerminalStatus value
    working_directory: NotRequired[str | None]
    tmux_session: NotRequired[str]
    tmux_window: NotRequired[str]
    last_active: NotRequired[str | None]
    initial_delivery: NotRequired[dict[str, str] | None]
    caller_id: NotRequired[str | None]
    group: NotRequired[list[str] | None]
    metadata: NotRequired[dict[str, Any] | None]
    allowed_tools: NotRequired[list[str]]
    last_change_at: NotRequired[str | None]  # Baton's (ProgressJSON)
    quiet_seconds: NotRequired[float | None]


class SessionSummaryJSON(TypedDict):
    """One item of `GET /sessions`."""

    id: str
    name: str
    status: str  # active, detached or terminated
    agent_profile: str | None
    working_directory: str | None


class SessionJSON(TypedDict):
    """`GET /sessions/{name}`: the session and its terminals."""

    session: SessionSummaryJSON
    terminals: list[TerminalJSON]


class OutputJSON(TypedDict):
    """`GET /terminals/{id}/output?mode=…`."""

    output: str
    mode: str
