"""Whether a working agent has stalled: no progress on its screen or in its signals.

A stalled model stream leaves an agent CLI busy forever: the spinner turns, nothing else
happens. `StallWatch` notices that within one wait (`Handoff.wait_for_response`) once
STALL_SECONDS pass without progress, measured two ways:

- `baton serve` says it: `GET /terminals/{id}` carries `quiet_seconds`, the seconds since
  the screen (its animation aside, `Provider.progress_view`) or a native signal changed;
- a server without the field (a stock `cao-server`), or one that cannot say it right now
  (`null`), gets its full output read (`?mode=full`) and hashed between checks, with the
  same animation masked, so a turning spinner is not progress there either.

Quiet time never counts from before the wait began (a prompt just sent is progress), and
a check is made at most every `check_interval` (the full output can be long).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from baton.errors import AgentStalled, BatonError
from baton.orchestrator.runlog import format_duration
from baton.providers import provider_class
from baton.providers.progress import still_text
from baton.status import TerminalStatus
from baton.wire import TerminalJSON

__all__ = ["ProgressApi", "StallRule", "StallWatch", "check_interval", "progress_view_for"]

# The longest time between two checks, whatever STALL_SECONDS is.
_MAX_CHECK_SECONDS = 30.0


class ProgressApi(Protocol):
    """The two reads a stall watch needs (ApiClient has them)."""

    def get_terminal(self, terminal_id: str) -> TerminalJSON: ...

    def get_full_output(self, terminal_id: str) -> str: ...


def progress_view_for(provider: str) -> Callable[[str], str]:
    """The provider's rule for what of its output is progress (a generic one if unknown)."""
    found = provider_class(provider)
    return found.progress_view if found is not None else still_text


def check_interval(stall_seconds: float, poll_seconds: float) -> float:
    """How often a wait checks for a stall: a twentieth of STALL_SECONDS, within
    [POLL_SECONDS, 30 s] (at most STALL_SECONDS)."""
    interval = min(max(poll_seconds, stall_seconds / 20), _MAX_CHECK_SECONDS)
    return min(interval, stall_seconds)


@dataclass(frozen=True)
class StallRule:
    """STALL_SECONDS, where progress is read, and each role's view of its output."""

    seconds: float
    api: ProgressApi
    view: Callable[[str], Callable[[str], str]]  # role output key -> the provider's view

    def watch(self, terminal_id: str, role_key: str, started: float, poll: float) -> StallWatch:
        return StallWatch(
            self.api,
            terminal_id,
            self.seconds,
            started=started,
            every=check_interval(self.seconds, poll),
            view=self.view(role_key),
        )


class StallWatch:
    """One wait's stall check (see the module docstring)."""

    def __init__(
        self,
        api: ProgressApi,
        terminal_id: str,
        stall_seconds: float,
        *,
        started: float,
        every: float,
        view: Callable[[str], str] = still_text,
    ) -> None:
        self.api = api
        self.terminal_id = terminal_id
        self.stall_seconds = stall_seconds
        self.started = started
        self.every = every
        self.view = view
        self._next_check = started + every
        self._server_says: bool | None = None  # whether the server has `quiet_seconds`
        self._digest: bytes | None = None
        self._digest_since = started

    def restart_clock(self, now: float) -> None:
        """Count quiet time from `now` (a dialog answered, the agent shown at work again)."""
        self.started = max(self.started, now)
        self._next_check = now + self.every

    def observe(self, who: str, status: str, now: float) -> None:
        """Raise AgentStalled once a working agent (not in a dialog) shows no progress."""
        if status == TerminalStatus.WAITING_USER_ANSWER:
            self.restart_clock(now)  # a person's turn, not the agent's
            return
        quiet = self.check(now)
        if quiet is not None:
            raise AgentStalled(
                f"{who} is still {status} but has shown no progress for "
                f"{format_duration(quiet)} (STALL_SECONDS={self.stall_seconds:g})",
                quiet_seconds=quiet,
            )

    def check(self, now: float) -> float | None:
        """The seconds without progress once they reach STALL_SECONDS; None before (and
        between checks, and when progress cannot be read)."""
        if self.stall_seconds <= 0 or now < self._next_check:
            return None
        self._next_check = now + self.every
        quiet = self._quiet(now)
        if quiet is None:
            return None
        quiet = min(quiet, now - self.started)
        return quiet if quiet >= self.stall_seconds else None

    def _quiet(self, now: float) -> float | None:
        try:
            if self._server_says is not False:
                data = self.api.get_terminal(self.terminal_id)
                self._server_says = "quiet_seconds" in data
                quiet = data.get("quiet_seconds")
                if isinstance(quiet, int | float) and not isinstance(quiet, bool):
                    return float(quiet)
            output = self.api.get_full_output(self.terminal_id)
        except BatonError:
            return None  # the status read says what is wrong, if anything
        digest = hashlib.sha256(self.view(output).encode("utf-8")).digest()
        if digest != self._digest:
            self._digest, self._digest_since = digest, now
        return now - self._digest_since
