"""A fork server for `baton run`s: Baton imported once, each loop a fork of it.

A `baton run` spent most of its CPU in a batch importing Baton, httpx, pydantic and click
before it sent anything. `ForkServer` starts one process (`python -m baton fork-server
FD`, a hidden command) that has imported them and waits on a socket; each launch
sends it the loop's command line, environment and directory with two descriptors (the
loop's log, and a socket of its own), and the server forks. The child is what `python -m
baton run` would be: a session of its own, the log as its stdout and stderr, exactly the
given environment, `sys.argv` as `-m baton` sets it, and `baton.cli.main` run to its exit
code. The server reaps each child through its pidfd and sends the exit code on that
child's socket, so `ForkedLoop.wait` reads it as `Popen.wait` would.

A batch's server exits when its control socket closes: its batch ended or died. A loop
whose launcher dies, and every loop of a server that dies, gets SIGTERM (it stops between
turns, state saved), as a subprocess of a killed batch does. A host's server, shared by
the feature jobs of a host, is `ForkServer.connected` to (`baton.batch.host_forks`). The
server's side is `baton.batch.forkserver_serve`.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from baton.batch.launch import (
    LoopProcess,
    SubprocessLauncher,
    die_with_parent,
)

__all__ = ["READY", "ForkServer", "ForkedLoop", "recv_fds"]

READY = b"ready"
_MAX_MESSAGE = 4 * 1024 * 1024  # a request: command line and environment, as JSON
_READY_SECONDS = 60.0


def _send_fds(sock: socket.socket, data: bytes, fds: Sequence[int]) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def recv_fds(sock: socket.socket, count: int) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancillary, _flags, _address = sock.recvmsg(
        _MAX_MESSAGE, socket.CMSG_LEN(count * fds.itemsize)
    )
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    return data, list(fds)


def _seqpacket_pair() -> tuple[socket.socket, socket.socket]:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for end in (mine, theirs):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _MAX_MESSAGE)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _MAX_MESSAGE)
    return mine, theirs


# -- the driver's side ----------------------------------------------------------------------


class ForkedLoop:
    """A `baton run` the fork server started: waited for, signalled and killed like a Popen."""

    def __init__(self, channel: socket.socket, argv: Sequence[str]) -> None:
        self._channel = channel
        self.args = list(argv)
        self.returncode: int | None = None
        first = channel.recv(64)
        if not first.startswith(b"pid "):
            channel.close()
            raise OSError(f"the fork server did not start the loop: {first!r}")
        self.pid = int(first.split()[1])
        try:
            self._pidfd: int | None = os.pidfd_open(self.pid)  # signals never hit a reused pid
        except OSError:
            self._pidfd = None  # it has exited already

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.wait(0)
        return None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        ready, _, _ = select.select([self._channel], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        message = self._channel.recv(64)
        if message.startswith(b"exit "):
            self.returncode = int(message.split()[1])
        else:  # the server went away first; its children were sent SIGTERM
            self._wait_gone()
            self.returncode = -signal.SIGTERM
        self._close()
        return self.returncode

    def _wait_gone(self) -> None:
        if self._pidfd is not None:
            select.select([self._pidfd], [], [])

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _close(self) -> None:
        self._channel.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class ForkServer:
    """Starts `baton run`s by forking a process that imported Baton already.

    Use as a context manager, or `start()` then `close()`. A launch that the server
    cannot take (it did not start, or died) starts a new program instead, as
    `SubprocessLauncher` does, so a loop never depends on it.
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._ready = False
        self._lock = threading.Lock()
        self._fallback = SubprocessLauncher()

    @classmethod
    def connected(cls, control: socket.socket | None) -> ForkServer:
        """A client of a server already running (a host's, `baton.batch.host_forks`), over
        `control`; None: every launch starts a program."""
        made = cls()
        made._control = control
        return made

    def start(self) -> ForkServer:
        mine, theirs = _seqpacket_pair()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "baton", "fork-server", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent if _on_main_thread() else None,
        )
        theirs.close()
        self._control = mine
        return self

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """A server this started exits (loops still running get SIGTERM, as after a killed
        batch); a host's server goes on, and each loop with it while its launcher lives."""
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
        if self._process is not None:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def launch(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, log: BinaryIO
    ) -> LoopProcess:
        if list(argv[:3]) != [sys.executable, "-m", "baton"]:
            return self._fallback.launch(argv, env, cwd, log)
        try:
            channel = self._send(list(argv), env, cwd, log)
        except OSError:  # the server never took it: nothing was started
            return self._fallback.launch(argv, env, cwd, log)
        try:
            return ForkedLoop(channel, argv)  # an OSError here: the loop may have started
        except OSError:
            channel.close()
            raise

    def _send(
        self, argv: list[str], env: Mapping[str, str], cwd: str, log: BinaryIO
    ) -> socket.socket:
        """Hand the server one loop to fork; the loop's own channel."""
        request = json.dumps({"args": argv[3:], "env": dict(env), "cwd": cwd}).encode()
        mine, theirs = _seqpacket_pair()
        try:
            with self._lock:
                control = self._ready_control()
                _send_fds(control, request, [theirs.fileno(), log.fileno()])
        except OSError:
            mine.close()
            raise
        finally:
            theirs.close()
        return mine

    def _ready_control(self) -> socket.socket:
        """The control socket once the server has imported Baton (OSError: it is gone)."""
        if self._control is None:
            raise OSError("the fork server is not running")
        if not self._ready:
            ready, _, _ = select.select([self._control], [], [], _READY_SECONDS)
            if not ready or self._control.recv(64) != READY:
                self._control.close()
                self._control = None
                raise OSError("the fork server did not start")
            self._ready = True
        return self._control


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
