"""A fork server for a batch's `baton run`s: Baton imported once, each loop a fork of it.

A `baton run` spent most of its CPU in a batch importing Baton, httpx, pydantic and click
before it sent anything. `ForkServer` starts one process (`python -m baton fork-server
FD`, a hidden command) that has imported them and waits on a socket; each launch
sends it the loop's command line, environment and directory with two descriptors (the
loop's log, and a socket of its own), and the server forks. The child is what `python -m
baton run` would be: a session of its own, the log as its stdout and stderr, exactly the
given environment, `sys.argv` as `-m baton` sets it, and `baton.cli.main` run to its exit
code. The server reaps each child through its pidfd and sends the exit code on that
child's socket, so `ForkedLoop.wait` reads it as `Popen.wait` would.

The server holds no threads (forking a threaded process is unsafe) and exits when its
control socket closes: its batch ended or died. Its children then get SIGTERM (they stop
between turns, state saved), as a subprocess of a killed batch does.
"""

from __future__ import annotations

import array
import contextlib
import gc
import json
import os
import random
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO

import httpx

from baton.batch.launch import (
    LoopProcess,
    SubprocessLauncher,
    die_with_parent,
    name_process,
)
from baton.tls import tls_verify_for

__all__ = ["ForkServer", "ForkedLoop", "load_http_client"]

_READY = b"ready"
_MAX_MESSAGE = 4 * 1024 * 1024  # a request: command line and environment, as JSON
_READY_SECONDS = 60.0
_NAME = "baton run"  # the child's name in `ps -o comm`; its command line is the server's
_MAX_FD = 1 << 16
_LOCAL_HOST = "127.0.0.1"
_LOCAL_URL = f"http://{_LOCAL_HOST}/"


def _send_fds(sock: socket.socket, data: bytes, fds: Sequence[int]) -> None:
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def _recv_fds(sock: socket.socket, count: int) -> tuple[bytes, list[int]]:
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
        """The server exits (loops still running get SIGTERM, as after a killed batch)."""
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
            if not ready or self._control.recv(64) != _READY:
                self._control.close()
                self._control = None
                raise OSError("the fork server did not start")
            self._ready = True
        return self._control


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


# -- the server's side ------------------------------------------------------------------------


def load_http_client() -> None:
    """Load what httpx loads only at its first client and first connection (httpcore, h11,
    the host-name codec): about 30 ms each forked loop would otherwise spend."""
    with httpx.Client(verify=tls_verify_for(_LOCAL_URL)) as client:
        client.build_request("GET", _LOCAL_URL)
    _LOCAL_HOST.encode("idna")


def _become_the_loop(request: dict[str, Any], log_fd: int) -> None:
    """In the forked child: what `python -m baton ARGS` with this env and cwd starts as."""
    os.setsid()
    die_with_parent()
    name_process(_NAME)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, _MAX_FD)  # the server's sockets and every sibling's channel
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
    random.seed()  # not the sequence every sibling inherited
    # The server runs as `python -m baton`: argv[0] and __main__ are already what that
    # sets, so only the arguments change.
    sys.argv = [sys.argv[0], *(str(a) for a in request["args"])]


def _run_the_loop(run_cli: Callable[[], None]) -> int:
    """The command line's entry point to its end, as the interpreter would exit from it."""
    try:
        run_cli()
    except SystemExit as ended:
        if ended.code is None or isinstance(ended.code, int):
            return int(ended.code or 0)
        print(ended.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _fork(request: dict[str, Any], log_fd: int, run_cli: Callable[[], None]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _become_the_loop(request, log_fd)
            code = _run_the_loop(run_cli)
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    return pid


def serve(descriptor: int, run_cli: Callable[[], None]) -> None:
    """Fork `run_cli` (the command line, imported with all it needs) per request.

    The server is `python -m baton fork-server FD`: by the time this runs, Baton and its
    libraries are imported. It says ready, then forks a loop per request until its
    control socket (FD) closes.
    """
    control = socket.socket(fileno=descriptor)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the batch stops its loops in order
    # What is imported by now is never garbage: no loop's collector walks it (or copies
    # its pages by touching it).
    gc.freeze()
    control.send(_READY)
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, its channel)
    with selectors.DefaultSelector() as selector:
        selector.register(control, selectors.EVENT_READ, None)
        while True:
            for key, _events in selector.select():
                if key.data is None:
                    try:
                        data, fds = _recv_fds(control, 2)
                    except ConnectionResetError:  # closed with our "ready" unread
                        data, fds = b"", []
                    if not data:
                        return  # the batch is gone: exit, and the children get SIGTERM
                    channel, log_fd = socket.socket(fileno=fds[0]), fds[1]
                    try:
                        pid = _fork(json.loads(data), log_fd, run_cli)
                    finally:
                        os.close(log_fd)
                    pidfd = os.pidfd_open(pid)
                    children[pidfd] = (pid, channel)
                    selector.register(pidfd, selectors.EVENT_READ, pid)
                    with contextlib.suppress(OSError):
                        channel.send(f"pid {pid}".encode())
                else:
                    pidfd = key.fd
                    pid, channel = children.pop(pidfd)
                    selector.unregister(pidfd)
                    os.close(pidfd)
                    _, status = os.waitpid(pid, 0)
                    with contextlib.suppress(OSError):
                        channel.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
                    channel.close()
