"""`OutageWindow`: how long `baton run` waits for a server that stopped answering.

Every call the run makes goes through `ApiClient`, which asks this window whether to try
again when the server does not answer (nothing listening, the connection cut, a proxy's
502/503/504). The first failure opens the outage (reported once), the first answer closes
it (reported once, with its duration); past SERVER_OUTAGE_SECONDS the call fails as
before. One window per client, shared by the run's threads (the status stream, the wait).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "ENDING_OUTAGE_SECONDS",
    "LONG_OUTAGE_SECONDS",
    "OutagePhase",
    "OutageReport",
    "OutageWindow",
]

# An outage this long is worth telling a person about while it lasts.
LONG_OUTAGE_SECONDS = 60.0
# How long an ending run still waits for an absent server (its last token reads, asking
# the agents to exit): its state is saved first, and a later `baton run` repairs the rest.
ENDING_OUTAGE_SECONDS = 5.0

# Waits between two attempts while the server is away: quick at first, then every 2 s.
_DELAYS = (0.25, 0.5, 1.0, 2.0)


class OutagePhase(StrEnum):
    """Where an outage is: just begun, lasting past LONG_OUTAGE_SECONDS, or over."""

    BEGAN = "began"
    LONG = "long"
    ENDED = "ended"


@dataclass(frozen=True)
class OutageReport:
    """A moment of one outage: what failed first, and how long it has lasted."""

    phase: OutagePhase
    base_url: str
    window_seconds: float
    seconds: float
    cause: str


class OutageWindow:
    """Whether a failed call may be tried again, and the start and end of each outage."""

    def __init__(
        self,
        base_url: str,
        seconds: float,
        *,
        report: Callable[[OutageReport], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url
        self.seconds = seconds
        self.report = report  # set by whoever logs and records the outages
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._since: float | None = None
        self._cause = ""
        self._told_long = False

    def ending(self) -> None:
        """The run is ending: wait at most ENDING_OUTAGE_SECONDS from now on, so the calls
        made on the way out never sit out a whole window (signals may be held by then).

        Safe inside a signal handler: one assignment, no lock (the interrupted code may
        hold it); a wait under way sees the shorter window at its next attempt.
        """
        self.seconds = min(self.seconds, ENDING_OUTAGE_SECONDS)

    @property
    def down(self) -> bool:
        """Whether an outage is under way (a call failed and none has been answered since)."""
        with self._lock:
            return self._since is not None

    def failed(self, cause: str, attempt: int) -> bool:
        """A call got no answer: True after waiting before its next attempt, False when the
        window is over (the caller then fails as it always did)."""
        now = self._clock()
        with self._lock:
            opened = self._since is None
            if opened:
                self._since, self._cause, self._told_long = now, cause, False
            since = self._since
            assert since is not None
            long = not self._told_long and now - since >= LONG_OUTAGE_SECONDS
            self._told_long = self._told_long or long
        if opened:
            self._tell(OutageReport(OutagePhase.BEGAN, self.base_url, self.seconds, 0.0, cause))
        if long:
            report = OutageReport(OutagePhase.LONG, self.base_url, self.seconds, now - since, cause)
            self._tell(report)
        if now - since >= self.seconds:
            return False
        delay = _DELAYS[min(attempt, len(_DELAYS) - 1)]
        self._sleep(min(delay, max(0.0, since + self.seconds - now)))
        return True

    def answered(self) -> None:
        """The server answered: the outage, if one was under way, is over."""
        if self._since is None:  # the common case, without the lock
            return
        now = self._clock()
        with self._lock:
            since, cause = self._since, self._cause
            self._since, self._cause = None, ""
        if since is not None:
            report = OutageReport(
                OutagePhase.ENDED, self.base_url, self.seconds, now - since, cause
            )
            self._tell(report)

    def _tell(self, report: OutageReport) -> None:
        if self.report is not None:
            self.report(report)
