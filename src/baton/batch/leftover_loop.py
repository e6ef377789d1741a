"""A loop a killed batch left behind, still holding its feature's state file.

A batch's loops get SIGTERM when the batch dies (they save their state and exit), but
one may stay on: inside a send to the batch's own server, which died with the batch, or
stuck anywhere else. The next batch run of the same feature must not wait for it
forever, nor drive the state file beside it. So each job records the loop it started
(`.tmp/batch-loop.json`: pid and host). When the next job finds the state file still
driven by exactly that process on this host, nobody else can be driving it: the batch
that started it is gone (this batch holds the batch lock). It is given a moment to
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

__all__ = ["LOOP_MARK_NAME", "LeftoverWait", "record_loop", "wait_for_previous_driver"]

LOOP_MARK_NAME = "batch-loop.json"  # beside the state file: the loop a job started


@dataclass(frozen=True)
class LeftoverWait:
    """Seconds after which a leftover loop is stopped, killed, or the feature given up."""

    terminate_after: float = 10.0
    kill_after: float = 20.0
    give_up_after: float = 30.0
    poll: float = 0.2


def record_loop(state_file: Path, pid: int) -> None:
    """Remember the loop just started for this state file (pid and host)."""
    mark = {"pid": pid, "host": socket.gethostname()}
    write_json_atomic(state_file.with_name(LOOP_MARK_NAME), mark)


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
        if _left_by_a_batch(state_file, holder):
            steps = ((wait.terminate_after, signal.SIGTERM), (wait.kill_after, signal.SIGKILL))
            for after, sig in steps:
                if waited >= after and sig not in sent:
                    sent.add(sig)
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(holder.pid, sig)
        time.sleep(wait.poll)


def _left_by_a_batch(state_file: Path, holder: DriverRecord) -> bool:
    """Whether the driver is the very loop a batch job started here for this state file."""
    try:
        mark = json.loads(state_file.with_name(LOOP_MARK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(mark, dict):
        return False
    same_process = holder.pid > 0 and mark.get("pid") == holder.pid
    return same_process and mark.get("host") == holder.host == socket.gethostname()
