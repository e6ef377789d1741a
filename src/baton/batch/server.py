"""The batch's own `baton serve` when no --api is given: a subprocess on a free loopback port.

Its state and its tmux socket are the batch's (the socket in a short /tmp path named after
the batch directory), so a batch that was killed and runs again gets a server that adopts
the agents still in that tmux server. It dies with the batch process; `stop` also ends its
tmux server, so no agent outlives a batch that ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from baton.errors import ApiUnreachableError
from baton.tls import tls_verify_for

__all__ = ["BatchServer", "announce_batch", "free_port"]

_STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def announce_batch(api: str, batch_id: str, ledger: Path, token: str | None) -> str | None:
    """Tell the server's web cockpit where the batch's ledger is (`PUT /baton/batches/{id}`);
    the cockpit's URL, or None from a server without the route (the batch goes on)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.put(
            f"{api.rstrip('/')}/baton/batches/{batch_id}",
            json={"ledger": str(ledger.absolute())},
            headers=headers,
            timeout=10,
        )
    except httpx.HTTPError:
        return None
    return f"{api.rstrip('/')}/ui" if response.status_code == 200 else None


class BatchServer:
    """`baton serve` for one batch directory."""

    def __init__(self, batch_dir: Path) -> None:
        self.state_dir = batch_dir / "server"
        digest = hashlib.sha256(str(batch_dir.resolve()).encode()).hexdigest()[:16]
        self.socket_dir = Path(tempfile.gettempdir()) / f"baton-batch-{os.getuid()}-{digest}"
        self.tmux_socket = self.socket_dir / "tmux.sock"
        self.log_path = batch_dir / "server.log"
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        """Start it and wait for /health; its base URL."""
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "BATON_TMUX_SOCKET": str(self.tmux_socket)}
        for name in ("TMUX", "TMUX_PANE"):
            env.pop(name, None)
        for _attempt in range(3):
            self.port = free_port()
            command = [sys.executable, "-m", "baton", "serve", "--port", str(self.port)]
            command += ["--state-dir", str(self.state_dir)]
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                    start_new_session=True,
                )
            if self._healthy():
                return self.base_url
            self._stop_process()
        raise ApiUnreachableError(f"the batch's baton serve did not start; see {self.log_path}")

    def _healthy(self) -> bool:
        deadline = time.monotonic() + _STARTUP_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            with contextlib.suppress(httpx.HTTPError):
                url = f"{self.base_url}/health"
                if httpx.get(url, timeout=2, verify=tls_verify_for(url)).status_code == 200:
                    return True
            time.sleep(0.1)
        return False

    def _stop_process(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        """Stop the server, then its tmux server (every agent left in it)."""
        self._stop_process()
        subprocess.run(
            ["tmux", "-S", str(self.tmux_socket), "kill-server"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        shutil.rmtree(self.socket_dir, ignore_errors=True)
