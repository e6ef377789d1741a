"""Per-terminal objects kept between requests: provider, context, input lock, and what
became of the first message.

Providers and contexts are built when a terminal is created and rebuilt from the
registry after a server restart, so every part of the service asks here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path

from baton.errors import BadRequestError
from baton.private import write_private
from baton.providers import Provider, TerminalContext, get_provider
from baton.providers.base import AgentProfile
from baton.server.profiles import ProfileStore
from baton.server.records import TerminalRecord
from baton.server.tmux import TmuxServer

__all__ = ["INITIAL_DELIVERY", "TerminalRuntime"]

# The first message's outcome, in the terminal's runtime directory: a restarted server
# reads it there.
INITIAL_DELIVERY = "initial_delivery.json"


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
        self._deliveries: dict[str, dict[str, str] | None] = {}
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

    def set_initial_delivery(self, record: TerminalRecord, outcome: dict[str, str] | None) -> None:
        """Keep what became of the first message (None: nothing yet); written to its file too,
        for a server that restarts, once there is something to tell."""
        if outcome is not None:
            write_private(Path(record.runtime_dir) / INITIAL_DELIVERY, json.dumps(outcome))
        with self._guard:
            self._deliveries[record.id] = outcome

    def initial_delivery(self, record: TerminalRecord) -> dict[str, str] | None:
        """What became of the first message, from memory (its file read once after a
        restart): a status read, polled many times a second, opens no file."""
        with self._guard:
            if record.id in self._deliveries:
                return self._deliveries[record.id]
        found = _read_delivery(Path(record.runtime_dir) / INITIAL_DELIVERY)
        with self._guard:
            return self._deliveries.setdefault(record.id, found)

    def discard(self, terminal_id: str) -> None:
        with self._guard:
            self._providers.pop(terminal_id, None)
            self._contexts.pop(terminal_id, None)
            self._locks.pop(terminal_id, None)
            self._deliveries.pop(terminal_id, None)

    def _profile_or_stub(self, name: str) -> AgentProfile:
        try:
            return self.profiles.load(name)
        except BadRequestError:
            return AgentProfile(name=name, description="", instructions="")


def _read_delivery(path: Path) -> dict[str, str] | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict):
        return None
    return {str(key): str(value) for key, value in found.items()}
