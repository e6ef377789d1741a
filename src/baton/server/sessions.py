"""Sessions as the API shows them: one tmux session each, holding the terminals in it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from baton.errors import NotFoundError
from baton.server.records import TerminalRecord
from baton.server.session_names import resolve_session_name
from baton.server.terminals import TerminalService
from baton.wire import SessionJSON, SessionSummaryJSON, TerminalJSON

__all__ = ["SessionService"]


class SessionService:
    """Lists, describes and deletes sessions over the terminal service's registry and tmux."""

    def __init__(self, terminals: TerminalService) -> None:
        self.terminals = terminals
        self.registry = terminals.registry
        self.tmux = terminals.tmux

    def list_sessions(self) -> list[SessionSummaryJSON]:
        live = self._tmux_sessions()
        return [self._summary(session.name, live) for session in self.registry.sessions()]

    def get_session(self, name: str) -> SessionJSON:
        name = self._require(name)
        return {
            "session": self._summary(name, self._tmux_sessions()),
            "terminals": self.session_terminals(name),
        }

    def session_terminals(self, name: str) -> list[TerminalJSON]:
        """The session's terminals, oldest (normally the conductor) first."""
        name = self._require(name)
        return [self.terminals.describe(record) for record in self.registry.terminals(name)]

    def delete_session(self, name: str) -> dict[str, Any]:
        """Stop every terminal in the session (CLIs, daemons, windows), then the session.

        Deleting a session that is already gone succeeds, as in CAO: a worker's session
        goes with its last terminal, and the client cleaning up after it must not fail.
        A bare name means its `cao-` session, as in CAO; unlike CAO, a recorded session
        without the prefix (made before the convention) is deleted too: every session
        on Baton's private tmux server is one it made.
        """
        name = resolve_session_name(self.registry, name)
        records = self.registry.terminals(name)
        self.terminals.stop_all(records)
        if self.registry.get_session(name) is not None or self.tmux.has_session(name):
            self.tmux.kill_session(name)
        self.registry.remove_session(name)
        for record in records:
            self.terminals.discard_files(record)
        return {"deleted": [name], "errors": []}

    def _require(self, name: str) -> str:
        """The recorded name `name` refers to (see `resolve_session_name`), or NotFound."""
        name = resolve_session_name(self.registry, name)
        if self.registry.get_session(name) is None:
            raise NotFoundError(f"session {name!r} not found")
        return name

    def _summary(self, name: str, live: Mapping[str, bool]) -> SessionSummaryJSON:
        """Name and tmux state, and who owns it: its first terminal's profile and directory."""
        status = "terminated" if name not in live else "active" if live[name] else "detached"
        owner: TerminalRecord | None = next(iter(self.registry.terminals(name)), None)
        return {
            "id": name,
            "name": name,
            "status": status,
            "agent_profile": owner.agent_profile if owner else None,
            "working_directory": owner.working_directory if owner else None,
        }

    def _tmux_sessions(self) -> dict[str, bool]:
        """Live tmux session name -> whether a client is attached."""
        output = self.tmux.run(
            "list-sessions", "-F", "#{session_name}|#{session_attached}", check=False
        )
        live: dict[str, bool] = {}
        for line in output.splitlines():
            name, _, attached = line.partition("|")
            live[name] = attached not in ("", "0")
        return live
