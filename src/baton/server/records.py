"""What the registry stores, as the rest of the server passes it around.

A terminal's record is everything needed to find its pane after a server restart and to
rebuild its provider context; an inbox message waits for its receiver to rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from baton.server.tmux_panes import PaneRef

__all__ = ["InboxMessage", "MessageStatus", "SessionRecord", "TerminalRecord", "iso_utc"]


@dataclass(frozen=True)
class SessionRecord:
    name: str
    created_at: float


@dataclass(frozen=True)
class TerminalRecord:
    """Everything needed to find a terminal's pane and rebuild its provider context.

    `caller_id` is the terminal that created this one (CAO's handoff/assign callback
    target); `group` and `metadata` are the labels CAO's sibling discovery reads;
    `allowed_tools` is the list a CAO client asked for (its MCP tools check it).
    """

    id: str
    name: str
    session_name: str
    provider: str
    agent_profile: str
    working_directory: str
    window_id: str
    pane_id: str
    runtime_dir: str
    created_at: float
    caller_id: str | None = None
    last_active: float | None = None
    group: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] | None = None
    allowed_tools: tuple[str, ...] | None = None

    @property
    def pane(self) -> PaneRef:
        """The terminal's pane, as every tmux act must name it (checked against its binding)."""
        return PaneRef(pane_id=self.pane_id, terminal_id=self.id)


class MessageStatus(StrEnum):
    """Where an inbox message is: waiting for the receiver to rest, typed in, or failed."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass(frozen=True)
class InboxMessage:
    id: int
    sender_id: str
    receiver_id: str
    message: str
    status: MessageStatus
    created_at: float


def iso_utc(epoch: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC (CAO's `last_active` and `created_at` shape)."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()
