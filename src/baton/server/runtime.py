"""Per-terminal objects kept between requests: provider, context and input lock.

Providers and contexts are built when a terminal is created and rebuilt from the
registry after a server restart, so every part of the service asks here.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from baton.errors import BadRequestError
from baton.providers import Provider, TerminalContext, get_provider
from baton.providers.base import AgentProfile
from baton.server.profiles import ProfileStore
from baton.server.records import TerminalRecord
from baton.server.tmux import TmuxServer

__all__ = ["TerminalRuntime"]


class TerminalRuntime:
    """The provider, context and lock of each terminal, thread-safe."""

    def __init__(
        self, profiles: ProfileStore, tmux: TmuxServer, environment: Mapping[str, str]
    ) -> None:
        self.profiles = profiles
        self.tmux = tmux
        self.environment = environment
        self._providers: dict[str, Provider] = {}
        self._contexts: dict[str, TerminalContext] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def remember(self, terminal_id: str, provider: Provider, ctx: TerminalContext) -> None:
        with self._guard:
            self._providers[terminal_id] = provider
            self._contexts[terminal_id] = ctx

    def provider(self, record: TerminalRecord) -> tuple[Provider, TerminalContext]:
        """The provider and context of a terminal, rebuilt after a server restart."""
        with self._guard:
            provider = self._providers.get(record.id)
            ctx = self._contexts.get(record.id)
            if provider is None or ctx is None:
                provider = get_provider(record.provider)
                ctx = TerminalContext(
                    terminal_id=record.id,
                    working_directory=Path(record.working_directory),
                    profile=self._profile_or_stub(record.agent_profile),
                    runtime_dir=Path(record.runtime_dir),
                    # The running CLI's own environment carries the terminal's env_vars.
                    env=self.tmux.pane_environment(record.pane) or dict(self.environment),
                )
                self._providers[record.id] = provider
                self._contexts[record.id] = ctx
            return provider, ctx

    def lock_for(self, terminal_id: str) -> threading.Lock:
        """The lock that keeps input to one terminal in order."""
        with self._guard:
            return self._locks.setdefault(terminal_id, threading.Lock())

    def discard(self, terminal_id: str) -> None:
        with self._guard:
            self._providers.pop(terminal_id, None)
            self._contexts.pop(terminal_id, None)
            self._locks.pop(terminal_id, None)

    def _profile_or_stub(self, name: str) -> AgentProfile:
        try:
            return self.profiles.load(name)
        except BadRequestError:
            return AgentProfile(name=name, description="", instructions="")
