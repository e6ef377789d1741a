"""The batch's board on a Ray cluster: where each job runs, its progress, its stop flag.

One small actor per batch, pinned to the driver's node (it goes when the driver goes).
Jobs write to it (started, progress, outcome) and ask it whether to stop between turns;
the driver reads it whole twice a second. Keys are per submission (`feature#n`), so a
retried task of an old submission never speaks for a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Board", "Entry"]


@dataclass
class Entry:
    """What the board knows of one submission."""

    host: str | None = None
    starts: int = 0  # 1 for a job that ran once; more when Ray retried it elsewhere
    progress: Any = None  # the job's last Progress
    outcome: Any = None  # its FeatureOutcome, once known
    stop: bool = False
    hosts: list[str] = field(default_factory=list)  # every host it started on, in order


class Board:
    """The actor's class (wrapped by `ray.remote` in ray_backend.py, not imported here)."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def _entry(self, key: str) -> Entry:
        return self.entries.setdefault(key, Entry())

    def started(self, key: str, host: str) -> int:
        """A start of the submission (Ray may retry it elsewhere); its attempt number."""
        entry = self._entry(key)
        entry.host = host
        entry.starts += 1
        entry.hosts.append(host)
        return entry.starts

    def progress(self, key: str, progress: Any, attempt: int = 0) -> None:
        if self._current(key, attempt):
            self._entry(key).progress = progress

    def outcome(self, key: str, outcome: Any, attempt: int = 0) -> None:
        if self._current(key, attempt):
            self._entry(key).outcome = outcome

    def _current(self, key: str, attempt: int) -> bool:
        """An attempt Ray gave up on (its node declared dead) that comes back is not heard."""
        return attempt in (0, self._entry(key).starts)

    def request_stop(self, key: str) -> None:
        self._entry(key).stop = True

    def should_stop(self, key: str) -> bool:
        return self._entry(key).stop

    def snapshot(self) -> dict[str, Entry]:
        return dict(self.entries)
