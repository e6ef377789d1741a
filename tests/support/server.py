"""A real `baton serve` subprocess for tests, with everything it starts cleaned up.

`running_baton_server(tmp_path)` starts the server on a free 127.0.0.1 port with its own
state directory and private tmux socket, waits for `/health`, and on exit — pass or
fail — stops the server, kills the private tmux server, and kills every process that
carries this server's marker in its environment (agent CLIs, test runs, daemons).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from tests.support.waiting import poll

from baton.server.processes import kill_processes_with_env

if TYPE_CHECKING:
    from baton.server.app import ServerHandle

__all__ = [
    "ServerProcess",
    "create_scripted_terminal",
    "free_port",
    "in_process_server",
    "kill_marked_processes",
    "listens_on",
    "raw_exchange",
    "running_baton_server",
    "wait_for_status",
]

MARKER_VARIABLE = "BATON_TEST_MARKER"
_STARTUP_SECONDS = 30.0


def free_port() -> int:
    """A port nobody listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listens_on(pid: int, port: int) -> bool:
    """True when process `pid` itself holds the socket listening on 127.0.0.1:`port`."""
    owned = set()
    try:
        descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        table = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    for descriptor in descriptors:
        with contextlib.suppress(OSError):  # closed meanwhile
            target = os.readlink(descriptor)
            if target.startswith("socket:["):
                owned.add(target[len("socket:[") : -1])
    for line in table:
        fields = line.split()
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        if fields[3] == "0A" and local_port == port and fields[9] in owned:  # 0A: LISTEN
            return True
    return False


def raw_exchange(port: int, request: bytes, *, read_after: float = 0.0) -> bytes:
    """Send `request` as bytes to 127.0.0.1:`port` at once; read the answer after
    `read_after` seconds, to the end of the connection (what httpx would not send)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        time.sleep(read_after)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@dataclass
class ServerProcess:
    """A running `baton serve` and the private tmux server behind it."""

    state_dir: Path
    tmux_socket: Path
    log_path: Path
    env: dict[str, str]
    profiles_dir: Path | None = None
    host: str = "127.0.0.1"
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header when the server runs with BATON_TOKEN, else nothing."""
        token = self.env.get("BATON_TOKEN")
        return {"Authorization": f"Bearer {token}"} if token else {}

    def client(self, **kwargs: object) -> httpx.Client:
        """An httpx client bound to the server (token included when one is set)."""
        return httpx.Client(base_url=self.base_url, headers=self.headers, timeout=60, **kwargs)  # type: ignore[arg-type]

    def tmux(self, *args: str) -> str:
        """Run a tmux command against the private socket; its stdout."""
        completed = subprocess.run(
            ["tmux", "-S", str(self.tmux_socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return completed.stdout

    def pane_ids(self) -> list[str]:
        """The ids (`%N`) of every pane in the private tmux server, oldest first."""
        return self.tmux("list-panes", "-a", "-F", "#{pane_id}").split()

    def pane_pid(self, pane_id: str | None = None) -> int:
        """The pid of a pane's command (the newest pane when none is named)."""
        target = pane_id or self.pane_ids()[-1]
        return int(self.tmux("display-message", "-p", "-t", target, "#{pane_pid}").strip())

    def terminal_pane(self, terminal_id: str) -> str | None:
        """The pane bound to a terminal (its `@baton_terminal` option), None when it has none."""
        listing = self.tmux("list-panes", "-a", "-F", "#{@baton_terminal} #{pane_id}")
        for line in listing.splitlines():
            owner, _, pane_id = line.partition(" ")
            if owner == terminal_id:
                return pane_id
        return None

    def screen(self, pane_id: str | None = None) -> str:
        """The visible screen of a pane (the newest pane when none is named)."""
        return self.tmux("capture-pane", "-p", "-t", pane_id or self.pane_ids()[-1])

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def start(self, *, port: int | None = None) -> None:
        """Start the server (again) on `port`, else a fresh free port, and wait for /health."""
        for _attempt in range(3):
            self.port = port or free_port()
            command = [
                sys.executable,
                "-m",
                "baton",
                "serve",
                "--host",
                self.host,
                "--port",
                str(self.port),
                "--state-dir",
                str(self.state_dir),
            ]
            if self.profiles_dir is not None:
                command += ["--profiles-dir", str(self.profiles_dir)]
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    command,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._wait_healthy():
                return
            self.stop()
        raise RuntimeError(f"baton serve did not become healthy; log:\n{self.log()}")

    def _wait_healthy(self) -> bool:
        process = self.process
        assert process is not None

        def outcome() -> str:
            if process.poll() is not None:
                return "exited"
            try:
                healthy = httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                healthy = False
            # Another test's server may have taken the same free port first: only ours counts.
            return "healthy" if healthy and listens_on(process.pid, self.port) else ""

        return poll(outcome, _STARTUP_SECONDS) == "healthy"
        return False

    def stop(self) -> None:
        """Stop the server process group (SIGTERM, then SIGKILL); tmux stays up."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the server process alone, as a crash would; tmux and its panes stay up."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def restart(self) -> None:
        """Stop the server and start a new one on the same state dir and tmux socket."""
        self.stop()
        self.start()


def kill_marked_processes(marker: str) -> list[int]:
    """Kill every process whose environment carries `MARKER_VARIABLE=marker`; their pids."""
    return kill_processes_with_env(MARKER_VARIABLE, marker, grace_seconds=0.5)


@contextlib.contextmanager
def running_baton_server(
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    profiles_dir: Path | None = None,
    host: str = "127.0.0.1",
) -> Iterator[ServerProcess]:
    """Run `baton serve` for the duration of the block; leave nothing behind."""
    marker = uuid.uuid4().hex
    # Unix socket paths are short (~107 bytes), tmp_path may not be: keep it under /tmp.
    socket_dir = Path(tempfile.mkdtemp(prefix="baton-tmux-"))
    state_dir = tmp_path / "baton-state"
    state_dir.mkdir(parents=True, exist_ok=True)
    server_env = {
        **os.environ,
        "BATON_TMUX_SOCKET": str(socket_dir / "tmux.sock"),
        "BATON_STATE_DIR": str(state_dir),
        "BATON_SCRIPTED_WORK_SECONDS": "0.3",
        MARKER_VARIABLE: marker,
        **(env or {}),
    }
    for name in ("TMUX", "TMUX_PANE"):
        server_env.pop(name, None)
    server = ServerProcess(
        state_dir=state_dir,
        tmux_socket=socket_dir / "tmux.sock",
        log_path=tmp_path / "baton-serve.log",
        env=server_env,
        profiles_dir=profiles_dir,
        host=host,
    )
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            subprocess.run(
                ["tmux", "-S", str(server.tmux_socket), "kill-server"],
                capture_output=True,
                timeout=30,
                check=False,
            )
            kill_marked_processes(marker)
            shutil.rmtree(socket_dir, ignore_errors=True)


@contextlib.contextmanager
def in_process_server(state_dir: Path, **options: Any) -> Iterator[ServerHandle]:
    """`baton serve` in a thread of this process on a free port, with a private tmux server
    whose socket is in a short temporary folder (socket paths are limited), both stopped
    afterwards. `options` are further `ServerOptions` fields (`timings`, …)."""
    from baton.server.app import ServerOptions, run_server_in_thread  # the server's imports

    with tempfile.TemporaryDirectory(prefix="baton-tmux-", ignore_cleanup_errors=True) as folder:
        settings = ServerOptions(
            port=0,
            state_dir=state_dir,
            tmux_socket=Path(folder) / "tmux.sock",
            kill_tmux_on_exit=True,
            **options,
        )
        with run_server_in_thread(settings) as handle:
            yield handle


def wait_for_status(
    client: httpx.Client, terminal_id: str, wanted: set[str], *, timeout: float = 30.0
) -> str:
    """Poll `GET /terminals/{id}` until its status is one of `wanted`; the last status seen."""
    seen = [""]

    def reached() -> bool:
        seen[0] = client.get(f"/terminals/{terminal_id}").json()["status"]
        return seen[0] in wanted

    poll(reached, timeout)
    return seen[0]


def create_scripted_terminal(
    client: httpx.Client,
    directory: Path,
    *,
    profile: str = "programmer",
    session_name: str | None = None,
    **params: str,
) -> dict[str, Any]:
    """A scripted agent in `directory`: a new session, or one more terminal in
    `session_name`; the terminal's JSON (its 201 checked)."""
    path = f"/sessions/{session_name}/terminals" if session_name else "/sessions"
    query = {
        "agent_profile": profile,
        "provider": "scripted",
        "working_directory": str(directory),
        **params,
    }
    created = client.post(path, params=query)
    assert created.status_code == 201, created.text
    return dict(created.json())
