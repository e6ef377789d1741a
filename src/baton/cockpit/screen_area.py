"""The part of an agent's screen worth a small panel: its work, not its furniture.

Codex, Claude Code and OpenCode end every screen with their composer (input box) and status or
footer rows: the model, the folder, `? for shortcuts`, `⏵⏵ bypass permissions on`.
In a panel a dozen lines tall those rows would be all one sees. `working_area` cuts the
screen above the composer (found by the provider's own screen reader), then drops
trailing blank lines and known furniture, folds runs of blank lines into one, and keeps
the last `rows` lines. A dialog
replaces the composer, so a waiting agent's question is kept whole.
"""

from __future__ import annotations

import re

from baton.providers.claude_screen import parse_screen as parse_claude
from baton.providers.codex_screen import split_screen as split_codex
from baton.providers.opencode_screen import parse_screen as parse_opencode
from baton.screen import normalize_screen

__all__ = ["working_area"]

# Rows that are the CLI's furniture wherever they appear at the bottom of a screen.
_FURNITURE = re.compile(
    r"^\s*(?:[─━╌┄═]+|\? for shortcuts.*|← for agents.*|⏵⏵ .*|\d{1,3}% context left.*"
    r"|[›❯>]\s*)$"
)
_STATUS_ROW = re.compile(r"^\s+\S.*\S · [~/]")  # Codex: `<model> <effort> · <cwd> · …`
_RIGHT_ALIGNED = 40  # Claude Code draws hints (`◐ medium · /effort`) at the right edge


def working_area(screen: str, provider: str, rows: int) -> str:
    """The last `rows` lines of the agent's work on `screen` (furniture and blanks cut)."""
    lines = normalize_screen(screen).split("\n")
    if provider == "claude_code":
        parsed = parse_claude(screen)
        if parsed.box is not None:
            lines = parsed.transcript
    elif provider == "codex":
        parts = split_codex(screen)
        if parts.composer is not None and all(_is_furniture(line) for line in parts.below_composer):
            lines = lines[: parts.composer]
    elif provider == "opencode":
        # The transcript above the box, cut to its width (a wide pane's sidebar dropped).
        opencode = parse_opencode(screen)
        if opencode.has_input:
            lines = opencode.transcript
    while lines and _is_furniture(lines[-1]):
        lines.pop()
    # Runs of blank lines (a CLI's vertical padding) take one row, not five.
    kept = [line for i, line in enumerate(lines) if line.strip() or (i and lines[i - 1].strip())]
    return "\n".join(kept[-rows:]) if rows > 0 else ""


def _is_furniture(line: str) -> bool:
    if not line.strip():
        return True
    if len(line) - len(line.lstrip(" ")) >= _RIGHT_ALIGNED:
        return True
    return bool(_FURNITURE.match(line) or _STATUS_ROW.match(line))
