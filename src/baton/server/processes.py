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
from collections.abc import Collection
from pathlib import Path

__all__ = ["kill_process_tree", "kill_processes_with_env", "stop_terminal_processes"]


def kill_process_tree(root_pid: int, *, grace_seconds: float = 2.0) -> None:
    """SIGTERM, then SIGKILL, every process in `root_pid`'s session and its descendants."""
    _terminate(_sessions_and_descendants([root_pid]), grace_seconds)


def kill_processes_with_env(name: str, value: str, *, grace_seconds: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process whose environment has `name=value`; their pids."""
    found = _with_env(name, {value})
    _terminate(found, grace_seconds)
    return found


def stop_terminal_processes(
    roots: Collection[int], name: str, values: Collection[str], *, grace_seconds: float = 2.0
) -> None:
    """Stop what several terminals started, together: each root's session and descendants,
    then every process still carrying `name` set to one of `values`. Two reads of /proc
    for a whole session's terminals, as for one."""
    _terminate(_sessions_and_descendants(roots), grace_seconds)
    _terminate(_with_env(name, values), grace_seconds)


def _with_env(name: str, values: Collection[str]) -> list[int]:
    """Every process (but this one) whose environment sets `name` to one of `values`."""
    needles = {f"{name}={value}".encode() for value in values}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if not needles.isdisjoint((entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            continue
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


def _sessions_and_descendants(roots: Collection[int]) -> list[int]:
    """Every process in the session each root leads, each root, and their descendants."""
    if not roots:
        return []
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
    leaders = set(roots)
    found = {pid for pid, sid in sessions.items() if sid in leaders}
    found.update(root for root in leaders if root in parents)
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    found.discard(os.getpid())
    return sorted(found)
