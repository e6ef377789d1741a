"""The terminal service: the one object the API talks to about terminals.

It wires the parts that each do one job — `creation` (start a CLI and wait until it
rests), `reading` (description, status, screen and output from the live model),
`sending` (type into a CLI), `lifecycle` (stop and delete) — over the three things that
know about a terminal: the registry (what exists), tmux (the pane) and the provider
(what the screen means). The screen watcher (`live`) keeps every terminal's screen and
status in memory and reports each status change to the event hub (`events`).
Every failure is a ServerError the API maps to an HTTP status.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from baton.server.creation import (
    DEFAULT_PROVIDER,
    TERMINAL_ID_VARIABLE,
    CreateRequest,
    ServiceTimings,
    TerminalCreator,
)
from baton.server.delivery import MessageDelivery
from baton.server.events import EventHub, TerminalEvent
from baton.server.lifecycle import TerminalLifecycle
from baton.server.live import LiveTerminal, ScreenWatcher
from baton.server.live_terminal import DEFAULT_MAX_PANE_LOG_BYTES
from baton.server.profiles import ProfileStore
from baton.server.reading import TerminalReader
from baton.server.records import TerminalRecord
from baton.server.registry import Registry
from baton.server.runtime import TerminalRuntime
from baton.server.sending import InputSender
from baton.server.terminal_tokens import TerminalTokens, without_secrets
from baton.server.tmux import TmuxServer
from baton.status import TerminalStatus
from baton.usage import Usage
from baton.wire import TerminalJSON

__all__ = [
    "DEFAULT_PROVIDER",
    "TERMINAL_ID_VARIABLE",
    "ServiceTimings",
    "TerminalService",
]

logger = logging.getLogger("baton.server")


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
        check_interval: float = 1.0,
        delivery: MessageDelivery | None = None,
        terminal_tokens: TerminalTokens | None = None,
        keep_transcripts: bool = False,
        max_pane_log_bytes: int | None = DEFAULT_MAX_PANE_LOG_BYTES,
    ) -> None:
        self.registry = registry
        self.tmux = tmux
        self.profiles = profiles
        self.state_dir = state_dir
        # What every pane inherits: never an API credential (see terminal_tokens.py).
        self.environment = without_secrets(os.environ if environment is None else environment)
        self.terminal_tokens = terminal_tokens
        self.keep_transcripts = keep_transcripts
        self.timings = timings or ServiceTimings()
        self.delivery = delivery or MessageDelivery(tmux)
        self.events = EventHub()
        self.runtime = TerminalRuntime(profiles, tmux, self.environment)
        self.watcher = ScreenWatcher(
            tmux,
            self._status_changed,
            interval=check_interval,
            max_log_bytes=max_pane_log_bytes,
        ).start()
        self.reader = TerminalReader(
            registry=registry, tmux=tmux, runtime=self.runtime, watcher=self.watcher
        )
        self.sender = InputSender(
            tmux=tmux,
            runtime=self.runtime,
            reader=self.reader,
            timings=self.timings,
            delivery=self.delivery,
            on_accepted=self.touch,
        )
        self.creator = TerminalCreator(
            registry=registry,
            tmux=tmux,
            profiles=profiles,
            runtime=self.runtime,
            reader=self.reader,
            watcher=self.watcher,
            state_dir=state_dir,
            environment=self.environment,
            timings=self.timings,
            send_input=self.sender.send_input,
            on_launch=self._launched,
            delivery=self.delivery,
            credentials=self.pane_credentials,
        )
        self.lifecycle = TerminalLifecycle(
            registry=registry,
            tmux=tmux,
            runtime=self.runtime,
            reader=self.reader,
            watcher=self.watcher,
            on_stopped=self._stopped,
            on_deleted=self.discard_files,
        )
        self._adopt_existing()

    # -- the API's verbs ------------------------------------------------------------------

    def arrival_ticket(self) -> int:
        """A creation's place in the start-up line, taken as its request arrives."""
        return self.creator.startups.ticket()

    def create_terminal(self, request: CreateRequest) -> TerminalJSON:
        """Start a CLI (see `TerminalCreator.create`); describe the terminal."""
        return self.describe(self.creator.create(request))

    def record(self, terminal_id: str) -> TerminalRecord:
        return self.reader.record(terminal_id)

    def get_terminal(self, terminal_id: str) -> TerminalJSON:
        return self.describe(self.record(terminal_id))

    def answers_from_memory(self, terminal_id: str) -> bool:
        """True when `get_terminal` needs no tmux process (it may run on the event loop)."""
        return self.reader.in_memory(terminal_id)

    def describe(self, record: TerminalRecord) -> TerminalJSON:
        return self.reader.describe(record)

    def status(self, record: TerminalRecord) -> TerminalStatus:
        return self.reader.status(record)

    def get_output(self, terminal_id: str, mode: str) -> str:
        return self.reader.get_output(terminal_id, mode)

    def send_input(self, terminal_id: str, message: str, *, queue: bool = True) -> None:
        """Deliver `message` as one new turn (see `InputSender.send_input`)."""
        self.sender.send_input(terminal_id, message, queue=queue)

    def require_alive(self, record: TerminalRecord) -> None:
        """TerminalExitedError (409) once the terminal's CLI has exited."""
        self.sender.require_alive(record)

    def touch(self, terminal_id: str) -> None:
        """Record activity on the terminal now (input typed in, a status change)."""
        self.registry.touch_terminal(terminal_id, time.time())

    def usage(self, terminal_id: str) -> Usage | None:
        """Cumulative tokens of the terminal's agent, as its provider reads the CLI's records."""
        provider, ctx = self.runtime.provider(self.record(terminal_id))
        return provider.usage(ctx)

    def exit_terminal(self, terminal_id: str) -> None:
        self.sender.exit_terminal(terminal_id)

    def delete_terminal(self, terminal_id: str) -> None:
        self.lifecycle.delete_terminal(terminal_id)

    def pane_credentials(self, terminal_id: str) -> dict[str, str]:
        """The API credential a terminal's pane gets: its own token, when the API has one."""
        if self.terminal_tokens is None:
            return {}
        return self.terminal_tokens.pane_variables(terminal_id)

    def discard_files(self, record: TerminalRecord) -> None:
        """A deleted terminal's token stops working; its runtime folder (pane log, the
        CLI's records) goes too, unless the server keeps transcripts."""
        self._discard(record.id, Path(record.runtime_dir))

    def _discard(self, terminal_id: str, runtime_dir: Path) -> None:
        if self.terminal_tokens is not None:
            self.terminal_tokens.revoke(terminal_id)
        if self.keep_transcripts:
            return
        if runtime_dir.parent == self.state_dir / "terminals":  # never outside our own tree
            shutil.rmtree(runtime_dir, ignore_errors=True)

    def stop(self, record: TerminalRecord) -> None:
        self.lifecycle.stop(record)

    def stop_all(self, records: Sequence[TerminalRecord]) -> None:
        self.lifecycle.stop_all(records)

    def close(self) -> None:
        """Stop watching and end every event stream; terminals keep running."""
        self.events.close()
        self.watcher.stop()
        self.registry.close()

    # -- events ---------------------------------------------------------------------------

    def _status_changed(
        self, live: LiveTerminal, previous: TerminalStatus | None, status: TerminalStatus
    ) -> None:
        """Publish first: the event waits for nothing, the registry (batched) after it."""
        self.events.publish(
            TerminalEvent(
                kind="status",
                terminal_id=live.terminal_id,
                session_name=live.session_name,
                status=str(status),
                previous_status=str(previous) if previous is not None else None,
            )
        )
        if previous is not None:
            self.touch(live.terminal_id)  # a status change is activity (`last_active`)

    def _launched(self, record: TerminalRecord) -> None:
        extra = {"provider": record.provider, "agent_profile": record.agent_profile}
        self.events.publish(
            TerminalEvent(
                kind="launch",
                terminal_id=record.id,
                session_name=record.session_name,
                extra=extra,
            )
        )

    def _stopped(self, record: TerminalRecord) -> None:
        self.events.publish(
            TerminalEvent(
                kind="completion", terminal_id=record.id, session_name=record.session_name
            )
        )

    def _adopt_existing(self) -> None:
        """Follow the terminals a previous server left running (seeded from tmux); stop the
        panes it started but never recorded (see `TerminalLifecycle.close_unrecorded`)."""
        panes = self.tmux.list_panes() if self.tmux.is_running() else {}
        for terminal_id in self.lifecycle.close_unrecorded(panes or {}):
            self._discard(terminal_id, self.state_dir / "terminals" / terminal_id)
        records = self.registry.terminals()
        panes = panes or {}
        for record in records:
            try:
                provider, ctx = self.runtime.provider(record)
            except ImportError:
                logger.warning("terminal %s: provider %s missing", record.id, record.provider)
                continue
            self.watcher.track_record(record, provider, ctx, fresh=False, panes=panes)
