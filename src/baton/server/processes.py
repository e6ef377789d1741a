"""Stopping everything a terminal's CLI started, daemons included.

A pane's command leads its own process session (tmux calls setsid for it), so every
process it starts — even one that double-forks away from its parent — keeps that
session id unless it asks for a new one. Killing by session and by descent covers both;
a helper that called `setsid` itself and was re-parented to init escapes both, but it
still carries the pane's environment, so a last sweep finds it by a variable only that
terminal's processes have.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path

__all__ = ["kill_process_tree", "kill_processes_with_env"]


def kill_process_tree(root_pid: int, *, grace_seconds: float = 2.0) -> None:
    """SIGTERM, then SIGKILL, every process in `root_pid`'s session and its descendants."""
    _terminate(_session_and_descendants(root_pid), grace_seconds)


def kill_processes_with_env(name: str, value: str, *, grace_seconds: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process whose environment has `name=value`; their pids."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    _terminate(found, grace_seconds)
    return found


def _terminate(targets: list[int], grace_seconds: float) -> None:
    """SIGTERM each, wait for their exits (pidfd events, not polls), SIGKILL the rest.

    Each process is held by a pidfd from before the first signal, so a pid reused by a
    new process meanwhile is never signalled.
    """
    handles = _pidfds(targets)
    try:
        for handle in handles:
            _send(handle, signal.SIGTERM)
        for handle in _wait_for_exits(handles, grace_seconds):
            _send(handle, signal.SIGKILL)
    finally:
        for handle in handles:
            os.close(handle)


def _pidfds(pids: list[int]) -> list[int]:
    handles = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            handles.append(os.pidfd_open(pid))
    return handles


def _wait_for_exits(handles: list[int], timeout: float) -> list[int]:
    """Block until every process exited (its pidfd turns readable) or `timeout`; the rest."""
    waiting = set(handles)
    poller = select.poll()
    for handle in waiting:
        poller.register(handle, select.POLLIN)
    deadline = time.monotonic() + timeout
    while waiting and (left := deadline - time.monotonic()) > 0:
        for handle, _ in poller.poll(max(1, int(left * 1000))):
            poller.unregister(handle)
            waiting.discard(handle)
    return sorted(waiting)


def _send(handle: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        signal.pidfd_send_signal(handle, signum)


def _session_and_descendants(root_pid: int) -> list[int]:
    parents: dict[int, int] = {}
    sessions: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        sessions[pid] = int(fields[3])
    found = {pid for pid, sid in sessions.items() if sid == root_pid}
    if root_pid in parents:
        found.add(root_pid)
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    found.discard(os.getpid())
    return sorted(found)
