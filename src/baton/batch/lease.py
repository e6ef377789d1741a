"""A feature's lease in a shared store: at most one host drives a feature, with fencing.

The store is a directory every host can reach. A feature's lease is a folder of epoch
records, `<store>/leases/<feature>/epoch-<N>.json`; the highest N is the current lease.
Taking the lease creates `epoch-<N+1>.json` with O_CREAT|O_EXCL, so of two hosts taking
it at once exactly one wins, and only when epoch N is released or expired. Its holder
renews the expiry from a heartbeat thread (an atomic rename of its own record). A holder
that was paused or cut off and comes back finds a higher epoch than its own: it has lost
the lease, and every write it fences with `check()` is refused. The epoch is the fencing
token; expiry uses wall clocks, so hosts need clocks agreeing within a few seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from baton.errors import LeaseBusy, LeaseLost
from baton.orchestrator.state import write_json_atomic

__all__ = ["Lease", "LeaseBusy", "LeaseLost", "LeaseRecord", "current_lease", "take_lease"]

DEFAULT_TTL_SECONDS = 30.0
_EPOCH = re.compile(r"^epoch-(\d+)\.json$")


@dataclass(frozen=True)
class LeaseRecord:
    """One epoch of a feature's lease, as stored."""

    feature: str
    epoch: int
    holder: str
    host: str
    expires_at: float
    released: bool = False
    where: str = ""  # the holder's work root on its host (its clone, worktrees, server)

    def live(self, now: float | None = None) -> bool:
        return not self.released and (now or time.time()) < self.expires_at

    def describe(self) -> str:
        return f"epoch {self.epoch} held by {self.holder} on {self.host}"


def _lease_dir(store: Path, feature: str) -> Path:
    return Path(store) / "leases" / feature


def _epochs(directory: Path) -> list[int]:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for name in names if (m := _EPOCH.match(name)))


def _read(path: Path) -> LeaseRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return LeaseRecord(**data)
    except (OSError, ValueError, TypeError):
        return None  # being written: O_EXCL created it, the record follows at once


def current_lease(store: Path, feature: str) -> LeaseRecord | None:
    """The feature's highest epoch, or None when nobody ever took it."""
    directory = _lease_dir(store, feature)
    epochs = _epochs(directory)
    if not epochs:
        return None
    for _attempt in range(50):
        record = _read(directory / f"epoch-{epochs[-1]}.json")
        if record is not None:
            return record
        time.sleep(0.01)
    # An empty record left by a taker that died between create and write: treat as expired.
    return LeaseRecord(feature, epochs[-1], "", "", 0.0)


def take_lease(
    store: Path,
    feature: str,
    *,
    ttl: float = DEFAULT_TTL_SECONDS,
    holder: str | None = None,
    where: str = "",
) -> Lease:
    """The feature's lease at a new epoch; LeaseBusy when a live holder has it."""
    directory = _lease_dir(store, feature)
    directory.mkdir(parents=True, exist_ok=True)
    holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    current = current_lease(store, feature)
    if current is not None and current.live():
        raise LeaseBusy(f"feature {feature}: its lease is {current.describe()}")
    epoch = (current.epoch if current else 0) + 1
    path = directory / f"epoch-{epoch}.json"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LeaseBusy(f"feature {feature}: another host took epoch {epoch} just now") from None
    host = socket.gethostname()
    record = LeaseRecord(feature, epoch, holder, host, time.time() + ttl, where=where)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        json.dump(asdict(record), stream)
    return Lease(Path(store), record, ttl)


class Lease:
    """A held lease: renew it, check it before every fenced write, release it at the end."""

    def __init__(self, store: Path, record: LeaseRecord, ttl: float) -> None:
        self.store = store
        self.record = record
        self.ttl = ttl
        self.lost: str | None = None  # why, once lost
        self._path = _lease_dir(store, record.feature) / f"epoch-{record.epoch}.json"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def epoch(self) -> int:
        return self.record.epoch

    def check(self) -> None:
        """LeaseLost unless this epoch is still the current one and has not expired."""
        with self._lock:
            if self.lost is None:
                current = current_lease(self.store, self.record.feature)
                if current is None or current.epoch != self.record.epoch:
                    newer = current.describe() if current else "nobody"
                    self.lost = f"the lease of {self.record.feature} is now {newer}"
                elif time.time() >= self.record.expires_at:
                    self.lost = f"the lease of {self.record.feature} expired before its renewal"
            if self.lost is not None:
                raise LeaseLost(self.lost)

    def renew(self) -> None:
        """Push the expiry out by one ttl; LeaseLost if a newer epoch exists."""
        self.check()
        with self._lock:
            renewed = LeaseRecord(**{**asdict(self.record), "expires_at": time.time() + self.ttl})
            write_json_atomic(self._path, asdict(renewed))
            self.record = renewed

    def start_heartbeat(self, on_lost: Callable[[str], None]) -> None:
        """Renew every ttl/3 from a daemon thread; `on_lost(why)` once, when it is lost."""

        def beat() -> None:
            while not self._stop.wait(self.ttl / 3):
                try:
                    self.renew()
                except LeaseLost as error:
                    on_lost(str(error))
                    return
                except OSError:
                    continue  # the store hiccupped: the next beat tries again before expiry

        self._thread = threading.Thread(target=beat, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def release(self) -> None:
        """End the heartbeat and mark this epoch released, if it is still the current one."""
        self.stop_heartbeat()
        with contextlib.suppress(LeaseLost, OSError):
            self.check()
            with self._lock:
                released = LeaseRecord(**{**asdict(self.record), "released": True})
                write_json_atomic(self._path, asdict(released))
                self.record = released
