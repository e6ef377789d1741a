"""The fork server's own side: imported Baton once, it forks one `baton run` per request.

Two ways to run it (`python -m baton fork-server`): a batch's, over the control socket
the batch passed it, ending when that socket closes (`serve`); or a host's, listening on
a path for any feature job of the host, ending once idle a while (`serve_host`). Either
way each loop is tied to its own channel: when the launcher's end closes while the loop
runs (the job or batch that asked for it died), the loop gets SIGTERM, as a subprocess of
the dead process would; and each loop gets SIGTERM if the server dies.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from baton.batch.forkserver import READY, recv_fds
from baton.batch.launch import die_with_parent, name_process
from baton.tls import tls_verify_for

__all__ = ["load_http_client", "serve", "serve_host"]

_NAME = "baton run"  # the child's name in `ps -o comm`; its command line is the server's
_MAX_FD = 1 << 16
_LOCAL_HOST = "127.0.0.1"
_LOCAL_URL = f"http://{_LOCAL_HOST}/"
_HOST_IDLE_SECONDS = 600.0  # a host's server with no launcher and no loop this long exits


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


class _Forker:
    """The server's loop: requests on control sockets, loops' exits, launchers gone.

    Single-threaded on purpose (forking a threaded process is unsafe): one selector over
    the listening socket, each control socket, each loop's pidfd and each loop's channel.
    """

    def __init__(self, run_cli: Callable[[], None]) -> None:
        self.run_cli = run_cli
        self.selector = selectors.DefaultSelector()
        self.controls = 0
        self.loops: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, its channel)

    def close(self) -> None:
        self.selector.close()

    def listen_on(self, listener: socket.socket) -> None:
        self.selector.register(listener, selectors.EVENT_READ, ("listener", listener))

    def add_control(self, control: socket.socket) -> None:
        with contextlib.suppress(OSError):
            control.send(READY)
        self.selector.register(control, selectors.EVENT_READ, ("control", control))
        self.controls += 1

    def step(self, timeout: float | None) -> bool:
        """Handle what is ready within `timeout`; False when nothing was."""
        events = self.selector.select(timeout)
        for key, _mask in events:
            kind, item = key.data
            if kind == "listener":
                with contextlib.suppress(OSError):
                    self.add_control(item.accept()[0])
            elif kind == "control":
                self._request(item)
            elif kind == "exit":
                self._reap(key.fd, item)
            elif self.loops.get(item, (0, None))[1] is key.fileobj:  # not reaped just now
                self._launcher_gone(item)
        return bool(events)

    def _request(self, control: socket.socket) -> None:
        try:
            data, fds = recv_fds(control, 2)
        except OSError:  # reset: closed with our "ready" unread
            data, fds = b"", []
        if not data or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            self.selector.unregister(control)
            control.close()
            self.controls -= 1
            return
        channel, log_fd = socket.socket(fileno=fds[0]), fds[1]
        try:
            self._start(json.loads(data), channel, log_fd)
        except Exception as error:  # one bad request never ends the others' loops
            print(f"baton fork-server: a loop could not be started: {error}", file=sys.stderr)
            channel.close()  # its launcher reads the end: not started
        finally:
            os.close(log_fd)

    def _start(self, request: dict[str, Any], channel: socket.socket, log_fd: int) -> None:
        pid = _fork(request, log_fd, self.run_cli)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            os.kill(pid, signal.SIGKILL)  # a loop it could not follow is not left running
            os.waitpid(pid, 0)
            raise
        self.loops[pidfd] = (pid, channel)
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", pid))
        self.selector.register(channel, selectors.EVENT_READ, ("channel", pidfd))
        with contextlib.suppress(OSError):
            channel.send(f"pid {pid}".encode())

    def _reap(self, pidfd: int, pid: int) -> None:
        _pid, channel = self.loops.pop(pidfd)
        self.selector.unregister(pidfd)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(channel)
        with contextlib.suppress(OSError):
            channel.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
        channel.close()

    def _launcher_gone(self, pidfd: int) -> None:
        """The launcher's end of a loop's channel closed while the loop runs: it died."""
        _pid, channel = self.loops[pidfd]
        try:
            if channel.recv(64, socket.MSG_DONTWAIT):
                return  # not an end: launchers send nothing, but never mind
        except BlockingIOError:
            return
        except OSError:
            pass  # reset: gone all the same
        self.selector.unregister(channel)
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)  # it stops between turns


def _prepare() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the batch stops its loops in order
    # What is imported by now is never garbage: no loop's collector walks it (or copies
    # its pages by touching it).
    gc.freeze()


def serve(descriptor: int, run_cli: Callable[[], None]) -> None:
    """A batch's server: fork `run_cli` per request on control socket `descriptor`, until
    that socket closes (the batch ended or died; its loops then get SIGTERM)."""
    _prepare()
    forker = _Forker(run_cli)
    try:
        forker.add_control(socket.socket(fileno=descriptor))
        while forker.controls:
            forker.step(None)
    finally:
        forker.close()


def serve_host(
    path: Path, run_cli: Callable[[], None], idle_seconds: float = _HOST_IDLE_SECONDS
) -> None:
    """A host's server: take launchers on the Unix socket `path`; exit once no launcher
    and no loop has been there for `idle_seconds`."""
    _prepare()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a server that died left it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    forker = _Forker(run_cli)
    try:
        listener.bind(str(path))
        listener.listen(64)
        forker.listen_on(listener)
        while forker.step(idle_seconds) or forker.controls or forker.loops:
            pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        listener.close()
        forker.close()
