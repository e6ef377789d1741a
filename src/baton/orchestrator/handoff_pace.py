"""How long the handoff waits between status reads, and when a stuck file is taken.

`Handoff` (baton.orchestrator.handoff) applies the handoff's rules (docs/architecture.md,
"A prompt's trip") to each status it reads; this module decides when it reads:
`HandoffTimings` holds the settings' waits, a `ChangeWaiter` ends a wait on a file or
status event, `Pace` sets how long a wait may last, and `StuckFile` notices an answer
that sits complete while the server never reports the CLI done.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from baton.orchestrator.runlog import RunLog, format_duration
from baton.status import TerminalStatus

__all__ = [
    "FAST_RECHECKS",
    "FAST_RECHECK_SECONDS",
    "STUCK_SECONDS",
    "ChangeWaiter",
    "HandoffTimings",
    "Pace",
    "StuckFile",
]


@dataclass(frozen=True)
class HandoffTimings:
    """How long the handoff waits, and for what (POLL_SECONDS, IDLE_GRACE_SECONDS, …)."""

    poll_seconds: float = 2.0  # between status reads without events; the longest wait
    idle_grace_seconds: float = 30.0  # a rest without the answer file before reminding
    response_timeout: float = 1800.0  # the longest one agent may work on one turn
    heartbeat_seconds: float = 30.0  # a "still working" line this often


# After a file event, status reads follow at this interval FAST_RECHECKS times (the CLI
# comes to rest a moment after its file), then at doubling intervals up to POLL_SECONDS.
FAST_RECHECK_SECONDS = 0.02
FAST_RECHECKS = 10
# A file unchanged this long (or IDLE_GRACE_SECONDS, if longer) while the server keeps
# saying `processing` is reported; after a further IDLE_GRACE_SECONDS it is taken.
STUCK_SECONDS = 30.0


class ChangeWaiter(Protocol):
    """Ends a wait early when something changed (`ChangeWatcher` is the real one)."""

    def wait(
        self, terminal_id: str, since: TerminalStatus, path: Path, timeout: float
    ) -> str | None:
        """Block up to `timeout`; "file", "status", or None when nothing happened."""
        ...

    def latest_status(self, terminal_id: str) -> TerminalStatus | None:
        """The terminal's status as a live status stream last gave it; None without one."""
        ...

    def status_after(self, terminal_id: str, seen: TerminalStatus) -> TerminalStatus | None:
        """The live stream's newest status when its event moved on from `seen`, else None."""
        ...


class StuckFile:
    """A response file complete and unchanged while the server keeps saying `processing`.

    Some servers never see a CLI finish (a stock cao-server with Codex 0.169). After
    STUCK_SECONDS (at least IDLE_GRACE_SECONDS) of an unchanged file the run says so in
    one line; after a further IDLE_GRACE_SECONDS it takes the file, with a warning.
    """

    def __init__(self, path: Path, idle_grace_seconds: float) -> None:
        self.path = path
        self.grace = idle_grace_seconds
        self.after = max(idle_grace_seconds, STUCK_SECONDS)
        self._signature: tuple[int, int] | None = None
        self._since = 0.0
        self._warned = False

    def check(self, now: float, who: str, status: str, log: RunLog) -> bool:
        """Note the file as of `now`; True when it is time to take it."""
        try:
            info = self.path.stat()
        except OSError:
            self._signature = None
            return False
        signature = (info.st_mtime_ns, info.st_size)
        if signature != self._signature:
            self._signature, self._since, self._warned = signature, now, False
            return False
        unchanged = now - self._since
        if not self._warned and unchanged >= self.after:
            self._warned = True
            log.warning(
                f"{who} wrote {self.path} {format_duration(unchanged)} ago and it has not "
                f"changed, but the server still reports {status}: its status detection likely "
                "does not recognise this CLI's finished screen (e.g. a stock cao-server with "
                f"Codex 0.169); taking the file in {format_duration(self.grace)} unless the "
                "status changes"
            )
        if self._warned and unchanged >= self.after + self.grace:
            log.warning(f"taking {self.path.name} from {who} although it still reports {status}")
            return True
        return False


class Pace:
    """How long the next wait may last: POLL_SECONDS at most; after a file event
    FAST_RECHECKS short ones, then doubling back up to POLL_SECONDS."""

    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self.interval = poll_seconds
        self._fast_left = 0

    def hurry(self) -> None:
        self.interval = min(FAST_RECHECK_SECONDS, self.poll_seconds)
        self._fast_left = FAST_RECHECKS

    def slow_down(self) -> None:
        if self._fast_left > 1:
            self._fast_left -= 1
            return
        self._fast_left = 0
        self.interval = min(self.interval * 2, self.poll_seconds)
