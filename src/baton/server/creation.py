"""Creating terminals: a session claimed, the CLI started in tmux, first-run dialogs passed.

One API session is one tmux session; one terminal is one window running one agent CLI.
A terminal is followed by the screen watcher from its first byte, and `create` returns
only once the CLI rests (or its startup time ran out), its first message typed if asked.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from baton.errors import BadRequestError, ServerError, TmuxError
from baton.private import private_dir
from baton.providers import AgentProfile, Provider, TerminalContext, get_provider
from baton.server import tool_policy
from baton.server.delivery import MessageDelivery
from baton.server.live import ScreenWatcher
from baton.server.mcp_offer import with_mcp_servers
from baton.server.name_claims import NameClaims
from baton.server.profiles import ProfileStore
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.registry import Registry
from baton.server.runtime import TerminalRuntime
from baton.server.session_names import SESSION_PREFIX
from baton.server.skills import pane_preface
from baton.server.startup_slots import StartupSlots
from baton.server.tmux import TmuxServer, WindowRef
from baton.server.tmux_windows import PaneLaunch, create_window

__all__ = [
    "DEFAULT_PROVIDER",
    "SESSION_PREFIX",
    "TERMINAL_ID_VARIABLE",
    "CreateRequest",
    "ServiceTimings",
    "TerminalCreator",
]

# CAO falls back to its own Kiro/Q CLI, which Baton does not drive; Codex is ours.
DEFAULT_PROVIDER = "codex"
# How long a settling creation waits for the watcher before it looks again anyway.
_RECHECK_SECONDS = 0.1
# How long a CLI at rest must draw nothing more before its start-up counts as done.
_STILL_SECONDS = 0.05
# Set in every pane; whatever a terminal's CLI starts inherits it, so its processes can be
# found after the terminal is deleted even when they left its process session.
TERMINAL_ID_VARIABLE = "BATON_TERMINAL_ID"


@dataclass(frozen=True)
class ServiceTimings:
    """How long the service waits for a CLI; bounded so no request hangs forever."""

    startup_timeout: float = 30.0  # first-run dialogs until a resting status
    accept_timeout: float = 10.0  # a new turn must start after input is submitted
    queue_timeout: float = 240.0  # queued input waits this long for the CLI to rest
    key_read_limit: float = 0.5  # a repeated exit key waits for the first to show read


@dataclass(frozen=True)
class CreateRequest:
    """What a caller asks of a new terminal; the HTTP routes and `run-step` both build one."""

    agent_profile: str
    new_session: bool
    provider: str | None = None
    working_directory: str | None = None
    session_name: str | None = None
    env_vars: Mapping[str, str] | None = None
    initial_message: str | None = None
    caller_id: str | None = None  # the creating terminal
    group: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    allowed_tools: Sequence[str] | None = None
    # Its place in the start-up line (`StartupSlots.ticket`, taken as the request came;
    # None: taken when it reaches the line).
    arrival: int | None = None


class TerminalCreator:
    """Starts CLIs in new windows and sessions and waits until they rest."""

    def __init__(
        self,
        *,
        registry: Registry,
        tmux: TmuxServer,
        profiles: ProfileStore,
        runtime: TerminalRuntime,
        reader: TerminalReader,
        watcher: ScreenWatcher,
        state_dir: Path,
        environment: Mapping[str, str],
        timings: ServiceTimings,
        send_input: Callable[[str, str], None],
        on_launch: Callable[[TerminalRecord], None],
        delivery: MessageDelivery,
        credentials: Callable[[str], Mapping[str, str]] = lambda _terminal_id: {},
        startups: StartupSlots | None = None,
    ) -> None:
        self.registry = registry
        self.tmux = tmux
        self.profiles = profiles
        self.runtime = runtime
        self.reader = reader
        self.watcher = watcher
        self.state_dir = state_dir
        self.environment = environment
        self.timings = timings
        self._send_input = send_input
        self._on_launch = on_launch
        self.delivery = delivery
        self._credentials = credentials
        # Names are claimed under a short lock; windows are made concurrently (tmux orders
        # its own commands), and only a session tmux lost is made again one at a time.
        self._names = NameClaims(registry)
        self._remaking = threading.Lock()
        self.startups = startups or StartupSlots()

    def create(self, request: CreateRequest) -> TerminalRecord:
        """Start a CLI in a new window (and session) and wait until it rests.

        Creations run concurrently, each CLI's start-up in one of the `startups` slots.

        The request's `env_vars` join the pane's environment; its `initial_message` is
        typed in once the CLI rests, and the outcome is kept as the terminal's
        `initial_delivery`. `caller_id`, `group` and `metadata` are
        recorded as given; `allowed_tools` (else the profile's) is recorded and carried
        to the CLI (see `tool_policy`).
        """
        if request.initial_message is not None:
            # Blank or oversized: refused before anything is created.
            self.delivery.prepare(request.initial_message)
        profile = self.profiles.load(request.agent_profile)
        provider_name = request.provider or profile.provider or DEFAULT_PROVIDER
        try:
            provider_impl = get_provider(provider_name)
        except ImportError as error:
            raise BadRequestError(f"provider {provider_name!r} is not available: {error}") from None
        group = request.session_name if not request.new_session else None
        with self.startups.slot(group, request.arrival):
            record = self._launch(request, profile, (provider_name, provider_impl))
            self.settle(record)
        if request.initial_message is not None:
            self._deliver_initial(record, request.initial_message)
        return record

    def _launch(
        self, request: CreateRequest, profile: AgentProfile, provider: tuple[str, Provider]
    ) -> TerminalRecord:
        """The CLI started in its new window, recorded and followed by the watcher."""
        provider_name, provider_impl = provider
        claim = self._names.claim(request.session_name, new_session=request.new_session)
        with claim as (session, terminal_id):
            if request.new_session and self.tmux.has_session(session):
                raise BadRequestError(f"session {session!r} already exists")
            ctx = self._context(request, profile, session, terminal_id)
            # The list a CAO client sent wins over the profile's own, as in CAO.
            allowed = tuple(request.allowed_tools or ()) or profile.allowed_tools
            ctx = tool_policy.apply_to_context(ctx, allowed, provider_name)
            launch = self._pane_launch(
                ctx, request.env_vars, (provider_name, provider_impl), allowed
            )
            window = self._open_window(
                session,
                _window_name(profile.name, terminal_id),
                terminal_id,
                launch,
                new_session=request.new_session,
            )
            record = _new_record(request, ctx, (provider_name, session, window), allowed)
            if request.new_session:
                self.registry.add_session(session)
            self.registry.add_terminal(record)
        self.runtime.remember(terminal_id, provider_impl, ctx)
        self.runtime.set_initial_delivery(record, None)  # none yet: no file to look for
        made = {window.pane_id: window.pane} if window.pane is not None else None
        self.watcher.track_record(record, provider_impl, ctx, fresh=True, panes=made)
        self._on_launch(record)
        return record

    def _context(
        self, request: CreateRequest, profile: AgentProfile, session: str, terminal_id: str
    ) -> TerminalContext:
        """The new terminal's directory, private runtime directory and environment."""
        working_directory = request.working_directory
        if working_directory is None and not request.new_session:
            # A terminal added to a session starts where the session's first one did.
            siblings = self.registry.terminals(session)
            working_directory = siblings[0].working_directory if siblings else None
        directory = _working_directory(working_directory)  # a bad one: nothing made yet
        runtime_dir = self.state_dir / "terminals" / terminal_id
        private_dir(runtime_dir.parent)
        private_dir(runtime_dir)
        return TerminalContext(
            terminal_id=terminal_id,
            working_directory=directory,
            profile=profile,
            runtime_dir=runtime_dir,
            env={**self.environment, **(request.env_vars or {})},
        )

    def _pane_launch(
        self,
        ctx: TerminalContext,
        env_vars: Mapping[str, str] | None,
        provider: tuple[str, Provider],
        allowed: tuple[str, ...] | None,
    ) -> PaneLaunch:
        """The CLI's command line and environment (the server's, the provider's, then the
        caller's `env_vars`); BadRequestError, the runtime directory removed, for an MCP
        command or a CLI that is not installed."""
        provider_name, provider_impl = provider
        try:
            spec = with_mcp_servers(provider_name, provider_impl.launch(ctx), ctx, allowed)
        except BadRequestError:
            shutil.rmtree(ctx.runtime_dir, ignore_errors=True)  # an MCP command not found
            raise
        spec = tool_policy.apply_to_launch(spec, allowed, provider_name)
        env = {
            **self.environment,
            **spec.env,
            **(env_vars or {}),
            TERMINAL_ID_VARIABLE: ctx.terminal_id,
            "CAO_TERMINAL_ID": ctx.terminal_id,
            **self._credentials(ctx.terminal_id),  # never the master token
        }
        if not spec.command_found(env.get("PATH", os.defpath)):
            # A CLI that is not installed is the caller's mistake, not a dead terminal.
            shutil.rmtree(ctx.runtime_dir, ignore_errors=True)
            raise BadRequestError(
                f"provider {provider_name!r} needs {spec.argv[0]!r}, "
                "which is not on the PATH of baton serve"
            )
        preface = pane_preface(ctx.profile)
        return PaneLaunch(spec.argv, env, ctx.working_directory, ctx.runtime_dir, preface)

    def reopen(
        self,
        record: TerminalRecord,
        *,
        argv: Sequence[str],
        env: Mapping[str, str],
        preface: str = "",
    ) -> TerminalRecord:
        """Start the terminal's CLI in a new window of its own (its session made again if
        tmux lost it): the way back for a terminal whose pane died with its tmux server.

        The registry records the new window and pane.
        """
        runtime_dir = Path(record.runtime_dir)
        launch = PaneLaunch(argv, env, Path(record.working_directory), runtime_dir, preface)
        window = self._open_window(
            record.session_name, record.name, record.id, launch, new_session=False
        )
        self.registry.set_pane(record.id, window.window_id, window.pane_id)
        return replace(record, window_id=window.window_id, pane_id=window.pane_id)

    def _open_window(
        self,
        session: str,
        window_name: str,
        terminal_id: str,
        launch: PaneLaunch,
        *,
        new_session: bool,
    ) -> WindowRef:
        """The terminal's window in `session`; the tmux session made with it when it is new,
        or when tmux lost it with its server (made again, as a restart does: the terminals
        it had stay dead, their panes are gone).

        A new session's name is claimed, so no other creation makes it; a lost one is made
        again by one creation at a time, the others then open windows in it.
        """

        def open_in(fresh: bool) -> WindowRef:
            return create_window(
                self.tmux,
                session=session,
                window_name=window_name,
                new_session=fresh,
                terminal_id=terminal_id,
                launch=launch,
            )

        if new_session:
            return open_in(True)
        try:
            return open_in(False)
        except TmuxError:
            if self.tmux.has_session(session):
                raise
        with self._remaking:
            return open_in(not self.tmux.has_session(session))

    def _deliver_initial(self, record: TerminalRecord, message: str) -> None:
        outcome: dict[str, str] = {"state": "delivered"}
        try:
            self._send_input(record.id, message)
        except ServerError as error:
            outcome = {"state": "failed", "kind": type(error).__name__, "message": str(error)}
        self.runtime.set_initial_delivery(record, outcome)

    def settle(self, record: TerminalRecord) -> None:
        """Answer first-run dialogs until the provider reports a resting status and no
        startup left (its MCP servers up), bounded by the startup timeout.

        Each look follows the watcher's next evaluation of this terminal (its CLI drew
        something), or `_RECHECK_SECONDS` for what a screen does not show (a provider's
        start-up files): the slot is given back as soon as the CLI rests, not at the next
        tick of a poll, and other terminals' output wakes nobody here.
        """
        provider, ctx = self.runtime.provider(record)
        deadline = time.monotonic() + self.timings.startup_timeout
        seen = self.watcher.evaluations_of(record.id)
        while (left := deadline - time.monotonic()) > 0:
            if self.reader.exited(record):
                return
            screen = self.reader.screen(record)
            keys = provider.startup_keys(screen)
            if keys:
                self.tmux.send_keys(record.pane, keys)
                # Ask again only once the dialog has reacted, so one dialog is never
                # answered twice (and the answer never lands in the next one).
                answered = min(time.monotonic() + 3.0, deadline)
                while (wait := answered - time.monotonic()) > 0:
                    seen = self.watcher.wait_evaluated(record.id, seen, min(wait, _RECHECK_SECONDS))
                    if self.reader.screen(record) != screen:
                        break
                continue
            wait = min(left, _RECHECK_SECONDS)
            if provider.status(screen, ctx).is_at_rest and not provider.starting(ctx):
                # At rest and still: a CLI can draw its prompt a moment before a first-run
                # dialog over it, and each pane write is looked at, so one look is not enough.
                still = time.monotonic() - self.watcher.last_output(record.id)
                if still >= _STILL_SECONDS:
                    return
                wait = min(wait, _STILL_SECONDS - still)
            seen = self.watcher.wait_evaluated(record.id, seen, wait)


def _window_name(profile_name: str, terminal_id: str) -> str:
    """`<profile>-<id prefix>`, as CAO names windows (profile names are plain: see profiles)."""
    return f"{profile_name}-{terminal_id[:4]}"


def _working_directory(requested: str | None) -> Path:
    directory = Path(requested).expanduser() if requested else Path.cwd()
    if not directory.is_absolute():
        raise BadRequestError(f"working_directory must be absolute: {requested!r}")
    if not directory.is_dir():
        raise BadRequestError(f"working_directory is not a directory: {requested!r}")
    return directory.resolve()


def _new_record(
    request: CreateRequest,
    ctx: TerminalContext,
    started: tuple[str, str, WindowRef],
    allowed: tuple[str, ...] | None,
) -> TerminalRecord:
    """What the registry keeps of a terminal just started: `started` is its provider's
    name, its session and its window."""
    provider_name, session, window = started
    now = time.time()
    return TerminalRecord(
        id=ctx.terminal_id,
        name=_window_name(ctx.profile.name, ctx.terminal_id),
        session_name=session,
        provider=provider_name,
        agent_profile=ctx.profile.name,
        working_directory=str(ctx.working_directory),
        window_id=window.window_id,
        pane_id=window.pane_id,
        runtime_dir=str(ctx.runtime_dir),
        created_at=now,
        caller_id=request.caller_id,
        last_active=now,
        group=tuple(request.group) if request.group else None,
        metadata=dict(request.metadata) if request.metadata is not None else None,
        allowed_tools=allowed,
    )
