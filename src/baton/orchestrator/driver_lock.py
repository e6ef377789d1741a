"""One driver per run: an exclusive lock beside the state file, held while `baton run` lives.

Two processes driving one state file would type the same prompt twice and overwrite each
other's position, so the second one must stop before it reads anything. The lock is a
`flock` on `<state file>.lock`: the kernel releases it however the holder ends (SIGKILL
included), so a lock can never outlive its process on this host. The file also records
who holds it (pid, host, start, command line) for the one-line refusal and for
`baton status`; a record whose lock is free was left by a run that died, and is taken over
with a warning.

The file is never removed: unlinking a lock file lets a third process lock a new inode
while a second still holds the old one. A clean release empties the record instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType

from baton.errors import RunLockedError
from baton.hints import baton_command
from baton.private import private_dir

__all__ = ["DriverLock", "DriverRecord", "current_driver", "lock_path_for"]

# A reader (`baton status`) holds a shared lock for an instant; a driver starting in that
# instant tries again for this long before it calls the state file taken.
_TAKE_ATTEMPTS = 20
_TAKE_PAUSE_SECONDS = 0.025


def lock_path_for(state_path: Path) -> Path:
    """Where the driver lock of a state file lives: beside it, `<name>.lock`."""
    return state_path.with_name(state_path.name + ".lock")


@dataclass(frozen=True)
class DriverRecord:
    """Who drives (or last drove) a run: enough to find, watch or stop it."""

    pid: int
    host: str
    started_at: float
    command: list[str]

    @classmethod
    def for_this_process(cls) -> DriverRecord:
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=time.time(),
            command=list(sys.argv),
        )

    @classmethod
    def parse(cls, text: str) -> DriverRecord | None:
        """The record in a lock file; None when it is empty or not one of ours."""
        try:
            data = json.loads(text)
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                started_at=float(data["started_at"]),
                command=[str(part) for part in data.get("command", [])],
            )
        except (ValueError, TypeError, KeyError, RecursionError):
            return None

    def describe(self) -> str:
        """`pid 123 on host h, since 2026-11-25 00:31:02`."""
        since = datetime.fromtimestamp(self.started_at).strftime("%Y-%m-%d %H:%M:%S")
        return f"pid {self.pid} on host {self.host}, since {since}"


class DriverLock:
    """The exclusive lock of one state file; `acquire` it, then `release` (or use `with`)."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = Path(state_path)
        self.path = lock_path_for(self.state_path)
        self._fd: int | None = None
        self.taken_over: DriverRecord | None = None  # a dead driver's record, if one was left

    def acquire(self) -> DriverLock:
        """Take the lock or raise RunLockedError naming the running driver and how to watch it.

        OSError when the lock file cannot be created (the state file's folder is not
        writable); the preflight checks then say so in their own words.
        """
        if not self.path.parent.exists():
            private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if not _take(fd, fcntl.LOCK_EX):
                holder = DriverRecord.parse(_read(fd))
                who = holder.describe() if holder else "a process that left no record"
                raise RunLockedError(
                    f"another baton run ({who}) is driving {self.state_path}; "
                    f"watch it with: {baton_command('watch', self.state_path)}"
                )
            self.taken_over = DriverRecord.parse(_read(fd))
            _write(fd, json.dumps(asdict(DriverRecord.for_this_process())))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Empty the record and let the lock go (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> DriverLock:
        return self.acquire() if self._fd is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def current_driver(state_path: Path) -> DriverRecord | None:
    """The process driving `state_path` right now; None when no run holds its lock."""
    path = lock_path_for(Path(state_path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            # Held: the driver writes its record right after taking the lock.
            return DriverRecord.parse(_read(fd)) or _UNRECORDED
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


_UNRECORDED = DriverRecord(pid=0, host="(not yet recorded)", started_at=0.0, command=[])


def _take(fd: int, operation: int) -> bool:
    for attempt in range(_TAKE_ATTEMPTS):
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < _TAKE_ATTEMPTS:
                time.sleep(_TAKE_PAUSE_SECONDS)
    return False


def _read(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _write(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, text.encode("utf-8"))
    with contextlib.suppress(OSError):
        os.fsync(fd)
