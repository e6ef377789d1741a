"""One reply of the scripted model: a shell command, a call to a named tool, or the end."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Step", "offered_name"]


@dataclass(frozen=True)
class Step:
    """A shell command for the CLI to run, a call to one of the CLI's other tools (an MCP
    tool such as CAO's `handoff`, by its own name, with its arguments), or the final
    message that ends the turn.

    A command that writes a file also names the file and its text (`writes`), so a
    server whose CLI has a file-writing tool (Gemini CLI's `write_file`) can use it.
    """

    command: str | None = None
    message: str | None = None
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None
    writes: tuple[Path, str] | None = None

    @property
    def is_final(self) -> bool:
        return self.command is None and self.tool is None


def offered_name(offered: Iterable[str], wanted: str) -> str | None:
    """The name under which a CLI offers the tool `wanted`: the name itself, or an MCP
    tool's name behind its server's prefix, whatever the CLI's separator
    (`mcp__cao-mcp-server__handoff`, `cao-mcp-server_handoff`, `cao-mcp-server-handoff`)."""
    for name in offered:
        if name == wanted or (name.endswith(wanted) and name[-len(wanted) - 1] in "_-/."):
            return name
    return None
