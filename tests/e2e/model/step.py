"""One reply of the scripted model: a shell command, a call to a named tool, or the end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Step"]


@dataclass(frozen=True)
class Step:
    """A shell command for the CLI to run, a call to one of the CLI's other tools (an MCP
    tool such as CAO's `handoff`, by its own name, with its arguments), or the final
    message that ends the turn."""

    command: str | None = None
    message: str | None = None
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None

    @property
    def is_final(self) -> bool:
        return self.command is None and self.tool is None
