"""Per-terminal tokens: the only API credential an agent ever holds.

The master token (`BATON_TOKEN`) can drive every terminal, so it never reaches an agent:
it is dropped from the environment every pane and tmux itself inherit
(`without_secrets`). When the server runs with a master token, each terminal is given
its own token instead, in its pane's environment as `BATON_TERMINAL_TOKEN` and as
`CAO_AUTH_LOCAL_TOKEN` (the variable CAO's MCP tools send as their bearer). It names its
terminal (`btt.<terminal id>.<secret>`); the server keeps only its SHA-256, one 0600
file per terminal, and `scopes.py` decides what the bearer may do.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from baton.private import private_dir, write_private

__all__ = [
    "CAO_TOKEN_VARIABLE",
    "MASTER_TOKEN_VARIABLE",
    "SECRET_VARIABLES",
    "TERMINAL_TOKEN_VARIABLE",
    "TerminalTokens",
    "without_secrets",
]

MASTER_TOKEN_VARIABLE = "BATON_TOKEN"
TERMINAL_TOKEN_VARIABLE = "BATON_TERMINAL_TOKEN"
CAO_TOKEN_VARIABLE = "CAO_AUTH_LOCAL_TOKEN"
# Credentials of the server (or of whoever started it): no pane inherits them.
SECRET_VARIABLES = frozenset({MASTER_TOKEN_VARIABLE, TERMINAL_TOKEN_VARIABLE, CAO_TOKEN_VARIABLE})
_TOKEN = re.compile(r"^btt\.([a-f0-9]{8})\.([A-Za-z0-9_-]{20,})$")


def without_secrets(environment: Mapping[str, str]) -> dict[str, str]:
    """`environment` less every variable that carries an API credential."""
    return {key: value for key, value in environment.items() if key not in SECRET_VARIABLES}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TerminalTokens:
    """Issues, checks and revokes terminal tokens; stores only their digests."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def issue(self, terminal_id: str) -> str:
        """A fresh token for `terminal_id` (replacing any earlier one)."""
        token = f"btt.{terminal_id}.{secrets.token_urlsafe(32)}"
        private_dir(self.directory)
        write_private(self.directory / terminal_id, _digest(token))
        return token

    def pane_variables(self, terminal_id: str) -> dict[str, str]:
        """The variables a pane gets: a fresh token under both names."""
        token = self.issue(terminal_id)
        return {TERMINAL_TOKEN_VARIABLE: token, CAO_TOKEN_VARIABLE: token}

    def terminal_for(self, token: str) -> str | None:
        """The terminal `token` belongs to, or None when it is no terminal's token."""
        match = _TOKEN.match(token)
        if match is None:
            return None
        terminal_id = match.group(1)
        try:
            stored = (self.directory / terminal_id).read_text(encoding="ascii").strip()
        except OSError:
            return None
        if not secrets.compare_digest(stored.encode(), _digest(token).encode()):
            return None
        return terminal_id

    def revoke(self, terminal_id: str) -> None:
        """The terminal's token stops working (its terminal was deleted)."""
        (self.directory / terminal_id).unlink(missing_ok=True)
