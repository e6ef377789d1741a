"""The terminal service: create, type into, read, exit and delete agent terminals.

One API session is one tmux session (see `sessions`); one terminal is one window running
one agent CLI.
The service joins the three things that know about a terminal — the registry (what
exists), tmux (the pane) and the provider (what the screen means) — and turns every
failure into a ServerError the API maps to an HTTP status.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.errors import (
    BadRequestError,
    InputNotAcceptedError,
    NotFoundError,
    ServerError,
    TerminalExitedError,
)
from baton.private import private_dir, write_private
from baton.providers import Provider, TerminalContext, get_provider
from baton.providers.base import AgentProfile
from baton.screen import normalize_screen
from baton.server.delivery import MessageDelivery
from baton.server.processes import kill_process_tree, kill_processes_with_env
from baton.server.profiles import ProfileStore
from baton.server.registry import Registry, TerminalRecord, iso_utc
from baton.server.tmux import TmuxServer
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["DEFAULT_PROVIDER", "ServiceTimings", "TerminalService"]

# CAO falls back to its own Kiro/Q CLI, which Baton does not drive; Codex is ours.
DEFAULT_PROVIDER = "codex"
SESSION_PREFIX = "baton-"
_SESSION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_POLL_SECONDS = 0.05
_INITIAL_DELIVERY = "initial_delivery.json"
# Set in every pane; whatever a terminal's CLI starts inherits it, so its processes can be
# found after the terminal is deleted even when they left its process session.
TERMINAL_ID_VARIABLE = "BATON_TERMINAL_ID"


@dataclass(frozen=True)
class ServiceTimings:
    """How long the service waits for a CLI; bounded so no request hangs forever."""

    startup_timeout: float = 30.0  # first-run dialogs until a resting status
    accept_timeout: float = 10.0  # the screen must change after input is submitted


class TerminalService:
    """Terminals and sessions over a private tmux server and a sqlite registry."""

    def __init__(
        self,
        *,
        registry: Registry,
        tmux: TmuxServer,
        profiles: ProfileStore,
        state_dir: Path,
        environment: Mapping[str, str] | None = None,
        timings: ServiceTimings | None = None,
        delivery: MessageDelivery | None = None,
    ) -> None:
        self.registry = registry
        self.tmux = tmux
        self.profiles = profiles
        self.state_dir = state_dir
        self.environment = dict(os.environ if environment is None else environment)
        self.timings = timings or ServiceTimings()
        self.delivery = delivery or MessageDelivery(tmux)
        self._providers: dict[str, Provider] = {}
        self._contexts: dict[str, TerminalContext] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._last_status: dict[str, TerminalStatus] = {}
        self._guard = threading.Lock()

    # -- creation -------------------------------------------------------------------

    def create_terminal(
        self,
        *,
        agent_profile: str,
        provider: str | None = None,
        working_directory: str | None = None,
        session_name: str | None = None,
        new_session: bool,
        env_vars: Mapping[str, str] | None = None,
        initial_message: str | None = None,
        caller_id: str | None = None,
        group: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        allowed_tools: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Start a CLI in a new window (and session); wait until it rests; describe it.

        `env_vars` join the pane's environment; `initial_message` is typed in once the
        CLI rests, and the outcome is kept as the terminal's `initial_delivery`.
        `caller_id` (the creating terminal), `group`, `metadata` and `allowed_tools` are
        recorded as given.
        """
        if initial_message is not None:
            self.delivery.prepare(initial_message)  # blank or oversized: refused before creating
        profile = self.profiles.load(agent_profile)
        provider_name = provider or profile.provider or DEFAULT_PROVIDER
        try:
            provider_impl = get_provider(provider_name)
        except ImportError as error:
            raise BadRequestError(f"provider {provider_name!r} is not available: {error}") from None
        with self._guard:
            session = self._claim_session(session_name, new_session=new_session)
            if working_directory is None and not new_session:
                # A terminal added to a session starts where the session's first one did.
                siblings = self.registry.terminals(session)
                working_directory = siblings[0].working_directory if siblings else None
            directory = self._working_directory(working_directory)
            terminal_id = self._new_terminal_id()
            runtime_dir = self.state_dir / "terminals" / terminal_id
            private_dir(runtime_dir.parent)
            private_dir(runtime_dir)
            ctx = TerminalContext(
                terminal_id=terminal_id,
                working_directory=directory,
                profile=profile,
                runtime_dir=runtime_dir,
                env={**self.environment, **(env_vars or {})},
            )
            spec = provider_impl.launch(ctx)
            env = {
                **self.environment,
                **spec.env,
                **(env_vars or {}),
                TERMINAL_ID_VARIABLE: terminal_id,
                "CAO_TERMINAL_ID": terminal_id,
            }
            if not spec.command_found(env.get("PATH", os.defpath)):
                # A CLI that is not installed is the caller's mistake, not a dead terminal.
                shutil.rmtree(runtime_dir, ignore_errors=True)
                raise BadRequestError(
                    f"provider {provider_name!r} needs {spec.argv[0]!r}, "
                    "which is not on the PATH of baton serve"
                )
            window = self.tmux.create_window(
                session=session,
                window_name=f"{profile.name}-{terminal_id[:4]}",
                new_session=new_session,
                working_directory=directory,
                argv=spec.argv,
                env=env,
                pane_log=runtime_dir / "pane.log",
                gate_file=runtime_dir / ".launch-gate",
            )
            record = TerminalRecord(
                id=terminal_id,
                name=f"{profile.name}-{terminal_id[:4]}",
                session_name=session,
                provider=provider_name,
                agent_profile=profile.name,
                working_directory=str(directory),
                window_id=window.window_id,
                pane_id=window.pane_id,
                runtime_dir=str(runtime_dir),
                created_at=time.time(),
                caller_id=caller_id,
                last_active=time.time(),
                group=tuple(group) if group else None,
                metadata=dict(metadata) if metadata is not None else None,
                allowed_tools=tuple(allowed_tools) if allowed_tools else None,
            )
            if new_session:
                self.registry.add_session(session)
            self.registry.add_terminal(record)
            self._providers[terminal_id] = provider_impl
            self._contexts[terminal_id] = ctx
        self._settle(record)
        if initial_message is not None:
            self._deliver_initial(record, initial_message)
        return self.describe(record)

    def _deliver_initial(self, record: TerminalRecord, message: str) -> None:
        outcome: dict[str, str] = {"state": "delivered"}
        try:
            self.send_input(record.id, message)
        except ServerError as error:
            outcome = {"state": "failed", "kind": type(error).__name__, "message": str(error)}
        path = Path(record.runtime_dir) / _INITIAL_DELIVERY
        write_private(path, json.dumps(outcome))

    def _working_directory(self, requested: str | None) -> Path:
        directory = Path(requested).expanduser() if requested else Path.cwd()
        if not directory.is_absolute():
            raise BadRequestError(f"working_directory must be absolute: {requested!r}")
        if not directory.is_dir():
            raise BadRequestError(f"working_directory is not a directory: {requested!r}")
        return directory.resolve()

    def _claim_session(self, session_name: str | None, *, new_session: bool) -> str:
        if not new_session:
            if session_name is None or self.registry.get_session(session_name) is None:
                raise NotFoundError(f"session {session_name!r} not found")
            if not self.tmux.has_session(session_name):
                raise NotFoundError(f"session {session_name!r} no longer exists in tmux")
            return session_name
        if session_name is None:
            session_name = SESSION_PREFIX + secrets.token_hex(4)
            while self.registry.get_session(session_name) is not None:
                session_name = SESSION_PREFIX + secrets.token_hex(4)
        if not _SESSION_NAME.match(session_name):
            raise BadRequestError(
                f"invalid session_name {session_name!r} (letters, digits, '_' and '-' only)"
            )
        if self.registry.get_session(session_name) is not None or self.tmux.has_session(
            session_name
        ):
            raise BadRequestError(f"session {session_name!r} already exists")
        return session_name

    def _new_terminal_id(self) -> str:
        while True:
            terminal_id = secrets.token_hex(4)
            if not self.registry.has_terminal(terminal_id):
                return terminal_id

    def _settle(self, record: TerminalRecord) -> None:
        """Answer first-run dialogs until the provider reports a resting status (bounded)."""
        provider, ctx = self._provider(record)
        deadline = time.monotonic() + self.timings.startup_timeout
        while time.monotonic() < deadline:
            if self.tmux.pane_state(record.pane_id).dead:
                return
            screen = self._screen(record)
            keys = provider.startup_keys(screen)
            if keys:
                self.tmux.send_keys(record.pane_id, keys)
                # Ask again only once the dialog has reacted, so one dialog is never
                # answered twice (and the answer never lands in the next one).
                answered = time.monotonic() + 3.0
                while time.monotonic() < min(answered, deadline):
                    time.sleep(_POLL_SECONDS * 2)
                    if self._screen(record) != screen:
                        break
                continue
            if provider.status(screen, ctx).is_at_rest:
                return
            time.sleep(_POLL_SECONDS * 2)

    # -- reading ----------------------------------------------------------------------

    def record(self, terminal_id: str) -> TerminalRecord:
        record = self.registry.get_terminal(terminal_id)
        if record is None:
            raise NotFoundError(f"terminal {terminal_id!r} not found")
        return record

    def get_terminal(self, terminal_id: str) -> dict[str, Any]:
        return self.describe(self.record(terminal_id))

    def describe(self, record: TerminalRecord) -> dict[str, Any]:
        """The terminal as the CAO API shows it, with its live status."""
        return {
            "id": record.id,
            "name": record.name,
            "provider": record.provider,
            "session_name": record.session_name,
            "agent_profile": record.agent_profile,
            "status": str(self.status(record)),
            "working_directory": record.working_directory,
            "tmux_session": record.session_name,
            "tmux_window": record.name,
            "last_active": iso_utc(self._last_active(record)),
            "initial_delivery": self._initial_delivery(record),
            "caller_id": record.caller_id,
            "group": list(record.group) if record.group else None,
            "metadata": dict(record.metadata) if record.metadata is not None else None,
            # What a CAO client asked for (its MCP tools enforce it); Baton itself does
            # not restrict an agent's tools, so by default: everything.
            "allowed_tools": list(record.allowed_tools) if record.allowed_tools else ["*"],
        }

    def _last_active(self, record: TerminalRecord) -> float | None:
        """The registry's value, read again: `describe` may just have recorded a change."""
        fresh = self.registry.get_terminal(record.id)
        return (fresh or record).last_active

    @staticmethod
    def _initial_delivery(record: TerminalRecord) -> dict[str, str] | None:
        path = Path(record.runtime_dir) / _INITIAL_DELIVERY
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def status(self, record: TerminalRecord) -> TerminalStatus:
        """`error` once the CLI has exited; otherwise what the provider reads on screen."""
        state = self.tmux.pane_state(record.pane_id)
        if not state.exists or state.dead:
            return self._note_status(record, TerminalStatus.ERROR)
        provider, ctx = self._provider(record)
        return self._note_status(record, provider.status(self._screen(record), ctx))

    def _note_status(self, record: TerminalRecord, status: TerminalStatus) -> TerminalStatus:
        """Count a status change as activity (`last_active`); the status, unchanged."""
        with self._guard:
            previous = self._last_status.get(record.id)
            self._last_status[record.id] = status
        if previous is not None and previous != status:
            self.touch(record.id)
        return status

    def touch(self, terminal_id: str) -> None:
        """Record activity on the terminal now (input typed in, a status change)."""
        self.registry.touch_terminal(terminal_id, time.time())

    def get_output(self, terminal_id: str, mode: str) -> str:
        record = self.record(terminal_id)
        if not self.tmux.pane_state(record.pane_id).exists:
            return ""
        history = normalize_screen(self.tmux.capture(record.pane_id, history=True))
        if mode == "full":
            return history
        provider, ctx = self._provider(record)
        return provider.last_message(history, ctx)

    def usage(self, terminal_id: str) -> Usage | None:
        """Cumulative tokens of the terminal's agent, as its provider reads the CLI's records."""
        provider, ctx = self._provider(self.record(terminal_id))
        return provider.usage(ctx)

    def _screen(self, record: TerminalRecord) -> str:
        return normalize_screen(self.tmux.capture(record.pane_id))

    # -- input and exit -------------------------------------------------------------------

    def send_input(self, terminal_id: str, message: str) -> None:
        """Paste `message`, submit it, and confirm the CLI took it (its screen changed)."""
        record = self.record(terminal_id)
        prepared = self.delivery.prepare(message)
        provider, _ = self._provider(record)
        with self._lock_for(terminal_id):
            self._require_alive(record)
            self.delivery.paste(record.pane_id, prepared, provider)
            self._require_alive(record)
            # Compared with the screen after the paste, not before it: a command the CLI
            # swallows (an unknown slash command) leaves the screen as it was before.
            # The paste must have finished drawing, or its late redraw would look like
            # the CLI reacting to the submit keys.
            pasted = self._settled_screen(record)
            self.delivery.submit(record.pane_id, provider)
            deadline = time.monotonic() + self.timings.accept_timeout
            while time.monotonic() < deadline:
                if self._screen(record) != pasted:
                    self.touch(terminal_id)
                    return
                self._require_alive(record)
                time.sleep(_POLL_SECONDS)
            raise InputNotAcceptedError(
                f"terminal {terminal_id}: the CLI did not take the input "
                f"(screen unchanged after {self.timings.accept_timeout:g}s)"
            )

    def _settled_screen(self, record: TerminalRecord, *, limit: float = 2.0) -> str:
        """The screen once two captures in a row agree (or after `limit` seconds)."""
        previous = self._screen(record)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
            current = self._screen(record)
            if current == previous:
                return current
            previous = current
        return previous

    def exit_terminal(self, terminal_id: str) -> None:
        """Ask the CLI to quit with its own exit keys; nothing is typed once it has exited."""
        record = self.record(terminal_id)
        provider, _ = self._provider(record)
        with self._lock_for(terminal_id):
            state = self.tmux.pane_state(record.pane_id)
            if state.exists and not state.dead:
                self.tmux.send_keys(record.pane_id, provider.exit_keys)

    def require_alive(self, record: TerminalRecord) -> None:
        """TerminalExitedError (409) once the terminal's CLI has exited."""
        self._require_alive(record)

    def _require_alive(self, record: TerminalRecord) -> None:
        state = self.tmux.pane_state(record.pane_id)
        if not state.exists or state.dead:
            raise TerminalExitedError(
                f"terminal {record.id}: the agent CLI has exited; input refused"
            )

    # -- deletion -----------------------------------------------------------------------

    def delete_terminal(self, terminal_id: str) -> None:
        record = self.record(terminal_id)
        self.stop(record)
        self.registry.remove_terminal(terminal_id)
        if not self.registry.terminals(record.session_name):
            self.tmux.kill_session(record.session_name)
            self.registry.remove_session(record.session_name)

    def stop(self, record: TerminalRecord) -> None:
        """Stop the CLI, whatever it started, and its window (the record stays)."""
        provider, ctx = self._provider(record)
        try:
            provider.cleanup(ctx)
        finally:
            state = self.tmux.pane_state(record.pane_id)
            if state.pid is not None:
                kill_process_tree(state.pid)
            kill_processes_with_env(TERMINAL_ID_VARIABLE, record.id)
            self.tmux.kill_window(record.window_id)
            with self._guard:
                self._providers.pop(record.id, None)
                self._contexts.pop(record.id, None)
                self._locks.pop(record.id, None)
                self._last_status.pop(record.id, None)

    # -- per-terminal objects ---------------------------------------------------------------

    def _provider(self, record: TerminalRecord) -> tuple[Provider, TerminalContext]:
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
                    env=self.tmux.pane_environment(record.pane_id) or self.environment,
                )
                self._providers[record.id] = provider
                self._contexts[record.id] = ctx
            return provider, ctx

    def _profile_or_stub(self, name: str) -> AgentProfile:
        try:
            return self.profiles.load(name)
        except BadRequestError:
            return AgentProfile(name=name, description="", instructions="")

    def _lock_for(self, terminal_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(terminal_id, threading.Lock())
