"""A loop a killed batch left behind, still holding its feature's state file.

A batch's loops get SIGTERM when the batch dies (they save their state and exit), but
one may stay on: inside a send to the batch's own server, which died with the batch, or
stuck anywhere else. The next batch run of the same feature must not wait for it
forever, nor drive the state file beside it. So each job records the loop it started
(`.tmp/batch-loop.json`: pid, host and when; removed when the loop ends). When the next
job finds the state file still driven by exactly that process on this host (the same pid,
a process started when it was recorded, pinned by a pidfd before it is signalled), nobody
else can be driving it: the batch that started it is gone (this batch holds the batch
lock). It is given a moment to
finish, then SIGTERM (a second signal stops a run at once, its state saved), then
SIGKILL (the state file is written atomically; the lock dies with the process). Any
other driver (someone's own `baton run` in the worktree) is only waited for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from baton.errors import StateFileError
from baton.orchestrator.driver_lock import DriverRecord, current_driver
from baton.orchestrator.state import write_json_atomic

__all__ = [
    "LOOP_MARK_NAME",
    "LeftoverWait",
    "forget_loop",
    "record_loop",
    "wait_for_previous_driver",
]

LOOP_MARK_NAME = "batch-loop.json"  # beside the state file: the loop a job started
# A recorded loop and the process now holding its pid are one if they started this close.
_SAME_START = 60.0


@dataclass(frozen=True)
class LeftoverWait:
    """Seconds after which a leftover loop is stopped, killed, or the feature given up."""

    terminate_after: float = 10.0
    kill_after: float = 20.0
    give_up_after: float = 30.0
    poll: float = 0.2


def record_loop(state_file: Path, pid: int) -> None:
    """Remember the loop just started for this state file (pid, host, when)."""
    mark = {"pid": pid, "host": socket.gethostname(), "at": time.time()}
    write_json_atomic(state_file.with_name(LOOP_MARK_NAME), mark)


def forget_loop(state_file: Path) -> None:
    """The loop has ended: nothing of it is left to stop."""
    with contextlib.suppress(OSError):
        state_file.with_name(LOOP_MARK_NAME).unlink()


def wait_for_previous_driver(state_file: Path, wait: LeftoverWait | None = None) -> None:
    """Return once no process drives `state_file`; StateFileError naming the driver when
    one still does after `give_up_after` (a loop this batch's jobs left is stopped first)."""
    wait = wait or LeftoverWait()
    started = time.monotonic()
    sent: set[signal.Signals] = set()
    while (holder := current_driver(state_file)) is not None:
        waited = time.monotonic() - started
        if waited > wait.give_up_after:
            raise StateFileError(f"{state_file} is still driven by {holder.describe()}")
        steps = ((wait.terminate_after, signal.SIGTERM), (wait.kill_after, signal.SIGKILL))
        due = [sig for after, sig in steps if waited >= after and sig not in sent]
        if due and _signal_leftover(state_file, holder, due[-1]):
            sent.update(due)
        time.sleep(wait.poll)


def _signal_leftover(state_file: Path, holder: DriverRecord, sig: signal.Signals) -> bool:
    """Send `sig` to the driver if it is the very loop a batch job started here for this
    state file: the pid it recorded, on this host, a process started when it recorded it
    (a pid reused, or one of another pid namespace, is not). The process is pinned by a
    pidfd first, so the signal cannot reach one that took its pid meanwhile."""
    mark = _mark(state_file)
    if mark is None or holder.pid <= 0 or mark.get("pid") != holder.pid:
        return False
    if not mark.get("host") == holder.host == socket.gethostname():
        return False
    try:
        pidfd = os.pidfd_open(holder.pid)
    except OSError:
        return False
    try:
        started = _process_start(holder.pid)
        at = mark.get("at")
        if started is None or not isinstance(at, int | float) or abs(started - at) > _SAME_START:
            return False
        signal.pidfd_send_signal(pidfd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def _mark(state_file: Path) -> dict[str, object] | None:
    try:
        mark = json.loads(state_file.with_name(LOOP_MARK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) else None


def _process_start(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
            if line.startswith("btime ")
        )
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22: starttime
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")
