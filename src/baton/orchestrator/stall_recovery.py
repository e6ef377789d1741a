"""Bring a stalled turn back: interrupt it, send its prompt again, restart its CLI.

`TurnRunner` (`baton.orchestrator.turns`) counts the stalls of one turn and escalates:

1. the first stall: the provider's interrupt keys (`Provider.interrupt_keys`, Esc for
   Codex, Claude Code and the scripted agent) are pressed through `POST /terminals/{id}/key`
   (which `baton serve` and a stock `cao-server` both have), and once the CLI is at rest
   (within `min(STALL_SECONDS, 30 s)`) its prompt is sent again;
2. a later stall, or a CLI that does not come to rest: the CLI is restarted
   (`AgentRestarter`, counted against AGENT_RESTARTS) and the prompt sent again.

Each step is one log line and one `stall` event in the run record, which the notifier
turns into a notification. A turn that ran out of RESPONSE_TIMEOUT is marked in the
state's `awaiting` (`timed_out_at`), so the next `baton run` takes it as stalled instead
of waiting for it the same way again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from baton.errors import ApiError
from baton.orchestrator.config import Settings
from baton.orchestrator.events import EventKind, RunEvents
from baton.orchestrator.runlog import RunLog
from baton.providers import provider_class
from baton.roles import ROLE_BY_TERMINAL
from baton.status import TerminalStatus

__all__ = ["StallApi", "StallRecovery", "interrupt_keys_for"]

_AT_REST = (TerminalStatus.IDLE.value, TerminalStatus.COMPLETED.value)
# How long an interrupted CLI may take to come to rest (at most STALL_SECONDS).
SETTLE_SECONDS = 30.0
_SETTLE_POLL_SECONDS = 0.2
_DEFAULT_INTERRUPT_KEYS = ("Escape",)


class StallApi(Protocol):
    """The two calls an interrupt needs (ApiClient has them)."""

    def send_key(self, terminal_id: str, key: str) -> None: ...

    def get_status(self, terminal_id: str) -> TerminalStatus: ...


def interrupt_keys_for(provider: str) -> tuple[str, ...]:
    """The keys that interrupt a turn of this provider's CLI (Esc when it is unknown)."""
    found = provider_class(provider)
    return found.interrupt_keys if found is not None else _DEFAULT_INTERRUPT_KEYS


class StallRecovery:
    """The steps that bring a stalled turn back, each said once (log, event, notification)."""

    def __init__(
        self,
        api: StallApi,
        log: RunLog,
        events: RunEvents,
        *,
        keys_for: Callable[[str], tuple[str, ...]],
        settle_seconds: float = SETTLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api = api
        self.log = log
        self.events = events
        self.keys_for = keys_for  # terminal key -> interrupt keys
        self.settle_seconds = settle_seconds
        self._clock = clock
        self._sleep = sleep

    @classmethod
    def for_settings(
        cls, api: StallApi, log: RunLog, events: RunEvents, settings: Settings
    ) -> StallRecovery:
        """Each role's provider's interrupt keys; settling within min(STALL_SECONDS, 30 s)."""
        settle = min(SETTLE_SECONDS, settings.stall_seconds or SETTLE_SECONDS)
        return cls(
            api,
            log,
            events,
            keys_for=lambda key: interrupt_keys_for(settings.provider_for(key)),
            settle_seconds=settle,
        )

    def interrupt(
        self, terminal_key: str, terminal_id: str, place: dict[str, Any], why: str, stall: int
    ) -> bool:
        """Press the CLI's interrupt keys; True once it is at rest (ready for the prompt)."""
        role = ROLE_BY_TERMINAL[terminal_key]
        keys = self.keys_for(terminal_key)
        self.log.warning(
            f"{role.title} (terminal {terminal_id}) stalled ({why}); "
            f"interrupting its turn ({' '.join(keys)})"
        )
        self._emit("interrupt", terminal_key, terminal_id, place, why, stall, keys=list(keys))
        try:
            for key in keys:
                self.api.send_key(terminal_id, key)
        except ApiError as error:
            self.log.warning(f"cannot interrupt {role.title} (terminal {terminal_id}): {error}")
            return False
        return self._settled(terminal_id)

    def resend(
        self, terminal_key: str, terminal_id: str, place: dict[str, Any], why: str, stall: int
    ) -> None:
        """Say that the interrupted turn's prompt goes out again (the caller sends it)."""
        role = ROLE_BY_TERMINAL[terminal_key]
        self.log.info(
            f"{role.title} (terminal {terminal_id}) is at rest after the interrupt; "
            "sending its prompt again"
        )
        self._emit("resend", terminal_key, terminal_id, place, why, stall)

    def restarting(
        self, terminal_key: str, terminal_id: str, place: dict[str, Any], why: str, stall: int
    ) -> None:
        """Record the restart step (the restarter's own line says what it did)."""
        self._emit("restart", terminal_key, terminal_id, place, why, stall)

    def _settled(self, terminal_id: str) -> bool:
        """Whether the CLI comes to rest within the settle time; False on error or silence."""
        deadline = self._clock() + self.settle_seconds
        while True:
            try:
                status = self.api.get_status(terminal_id)
            except ApiError:
                return False
            if status in _AT_REST:
                return True
            if status == TerminalStatus.ERROR or self._clock() >= deadline:
                return False
            self._sleep(_SETTLE_POLL_SECONDS)

    def _emit(
        self,
        action: str,
        terminal_key: str,
        terminal_id: str,
        place: dict[str, Any],
        why: str,
        stall: int,
        **extra: Any,
    ) -> None:
        self.events.emit(
            EventKind.STALL,
            action=action,
            role=ROLE_BY_TERMINAL[terminal_key].output_key,
            terminal_id=terminal_id,
            **place,
            stall=stall,
            reason=why,
            **extra,
        )
