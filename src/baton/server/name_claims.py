"""The session name and terminal id of a creation, claimed before anything is made.

Creations run concurrently; each claims its names under one short lock and holds them
until the registry records them, so two creations never pick the same new session or
terminal id.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from baton.errors import BadRequestError, NotFoundError
from baton.server.registry import Registry
from baton.server.session_names import SESSION_PREFIX, new_session_name, resolve_session_name

__all__ = ["NameClaims"]


class NameClaims:
    """Names of the creations under way, beside those the registry holds."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._sessions: set[str] = set()
        self._terminal_ids: set[str] = set()

    @contextmanager
    def claim(self, session_name: str | None, *, new_session: bool) -> Iterator[tuple[str, str]]:
        """The session the terminal goes in (a new one named by CAO's convention) and a new
        terminal id, held until the block ends (by then the registry has them)."""
        with self._lock:
            session = self._session(session_name, new_session=new_session)
            terminal_id = self._new_terminal_id()
            new = {session} if new_session else set()
            self._sessions |= new
            self._terminal_ids.add(terminal_id)
        try:
            yield session, terminal_id
        finally:
            with self._lock:
                self._sessions -= new
                self._terminal_ids.discard(terminal_id)

    def _session(self, session_name: str | None, *, new_session: bool) -> str:
        if not new_session:
            if session_name is not None:
                session_name = resolve_session_name(self.registry, session_name)
            if session_name is None or self.registry.get_session(session_name) is None:
                raise NotFoundError(f"session {session_name!r} not found")
            return session_name
        if session_name is None:
            session_name = SESSION_PREFIX + secrets.token_hex(4)
            while self._session_taken(session_name):
                session_name = SESSION_PREFIX + secrets.token_hex(4)
        session_name = new_session_name(session_name)
        if self._session_taken(session_name):
            raise BadRequestError(f"session {session_name!r} already exists")
        return session_name

    def _session_taken(self, name: str) -> bool:
        return name in self._sessions or self.registry.get_session(name) is not None

    def _new_terminal_id(self) -> str:
        while True:
            terminal_id = secrets.token_hex(4)
            if terminal_id not in self._terminal_ids and not self.registry.has_terminal(
                terminal_id
            ):
                return terminal_id
