"""One fork server per host for feature jobs' `baton run`s: started on demand, shared.

A feature job on a cluster runs in a worker that starts cold, and so did its `baton run`
(a third of a second of imports before its first request). The host's fork server imported
them once: the first job that needs it starts it (under `forks.lock`, detached, as the
host's `baton serve`), later jobs connect to it. It listens in the host's private socket
directory on a path named after the code it runs, so a Baton upgraded on the host gets a
server of its own while the old one finishes its loops and leaves once idle. A loop forked
for a job gets SIGTERM when that job's process dies, as its subprocess would.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path

import baton
from baton.batch.file_lock import exclusive_lock
from baton.batch.forkserver import ForkServer
from baton.batch.host_process import alive, end, socket_dir, spawn_detached

__all__ = ["host_fork_server", "stop_host_forks"]

_STARTUP_SECONDS = 60.0
_RECORDS = "forks-*.json"


def _code_key() -> str:
    """What a forked loop runs: this interpreter, Baton's version and sources' times, and
    the time of each import directory (an upgraded library changes its site-packages)."""
    package = Path(baton.__file__).parent
    newest = max((p.stat().st_mtime_ns for p in package.rglob("*.py")), default=0)
    paths = [f"{entry}:{os.stat(entry).st_mtime_ns}" for entry in sys.path if os.path.isdir(entry)]
    text = "\n".join([sys.executable, baton.__version__, str(package), str(newest), *paths])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def host_fork_server(work_root: Path) -> ForkServer:
    """A launcher on this host's fork server, started now if none answers.

    Whatever fails, it still launches: a server that cannot be had leaves each launch to
    start a program of its own. Close it once its loop has ended.
    """
    try:
        key = _code_key()
        path = socket_dir(work_root) / f"forks-{key}.sock"
        with exclusive_lock(work_root / "forks.lock"):
            control = _connect(path)
            if control is None:
                control = _start(work_root, key, path)
    except OSError:  # a file that went mid-upgrade, a full disk: a program per loop
        control = None
    return ForkServer.connected(control)


def _start(work_root: Path, key: str, path: Path) -> socket.socket | None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    command = [sys.executable, "-m", "baton", "fork-server", "--listen", str(path)]
    try:  # its environment is no loop's: each request carries the loop's own
        pid = spawn_detached(command, dict(os.environ), work_root / "forks.log")
    except OSError:
        return None
    (work_root / f"forks-{key}.json").write_text(json.dumps({"pid": pid}), encoding="utf-8")
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline and alive(pid):
        control = _connect(path)
        if control is not None:
            return control
        time.sleep(0.02)
    return None


def stop_host_forks(work_root: Path) -> None:
    """Stop this host's fork servers (their loops get SIGTERM) and forget them."""
    for record in work_root.glob(_RECORDS):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pid = int(json.loads(record.read_text(encoding="utf-8"))["pid"])
            if _is_fork_server(pid):  # not a process that took the pid of one long gone
                end(pid)
        with contextlib.suppress(OSError):
            record.unlink()
    sockets = socket_dir(work_root)
    for left in sockets.glob("forks-*.sock"):
        with contextlib.suppress(OSError):
            left.unlink()
    with contextlib.suppress(OSError):
        sockets.rmdir()  # when nothing else of the host's is in it


def _is_fork_server(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"fork-server" in argv and b"--listen" in argv
