"""Status reads and turn ends: `baton serve` next to `cao-server` 2.5.4, in one run.

Both servers run as real processes on 127.0.0.1 with private state (Baton: its own
state dir and tmux socket; CAO: a temporary HOME, CAO_HOME_DIR and TMUX_TMPDIR). Baton
drives its scripted agent; CAO drives its credential-free `mock_cli` provider (the wheel
does not ship the `mock_cli` program, so `bench/bin/mock_cli` stands in for it).

Printed, for each server:

1. idle: `GET /terminals/{id}` one after another on one resting terminal, p50/p99;
2. load: N live terminals, every terminal polled every 0.5 s for a while, p50/p99 and
   the request rate reached;
3. turn end (Baton): from the moment the CLI's finished turn reaches the pane (the bench
   watches the pane log with inotify) until the `completed` event arrives on
   `GET /events`, and until a long poll (`status/wait`) returns.

No figure is asserted; the machine's load shows in them. Run:

    .venv/bin/python bench/status_reads.py [--terminals 200] [--poll-seconds 20]
        [--cao .tools/cao/bin/cao-server] [--skip-cao]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from events_stream import CompletedListener, free_port
from inotify_simple import INotify
from inotify_simple import flags as inotify_flags

ROOT = Path(__file__).resolve().parents[1]
MOCK_CLI_DIR = ROOT / "bench" / "bin"


def _percentiles(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"n={len(samples):<6} p50 {statistics.median(ordered) * 1000:8.2f} ms"
        f"   p99 {p99 * 1000:8.2f} ms   max {ordered[-1] * 1000:8.2f} ms"
    )


@dataclass
class Server:
    """One API server process and how to make terminals on it."""

    name: str
    base_url: str
    process: subprocess.Popen[bytes]
    work: Path
    create_params: dict[str, str]
    cleanup: Callable[[], None]
    terminals: list[str] = field(default_factory=list)

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.cleanup()


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], path: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited early ({process.returncode})")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base_url + path, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise SystemExit(f"server at {base_url} did not come up")


def start_baton(work: Path) -> Server:
    port = free_port()
    state = work / "baton-state"
    sock = Path(tempfile.mkdtemp(prefix="bt-")) / "tmux.sock"
    env = {
        **os.environ,
        "BATON_STATE_DIR": str(state),
        "BATON_TMUX_SOCKET": str(sock),
        "BATON_SCRIPTED_WORK_SECONDS": "0.3",
    }
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    log = (work / "baton.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "baton", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    _wait_healthy(base_url, process, "/health")

    def cleanup() -> None:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True)
        shutil.rmtree(sock.parent, ignore_errors=True)

    project = work / "project"
    project.mkdir(exist_ok=True)
    params = {"provider": "scripted", "agent_profile": "tester", "working_directory": str(project)}
    return Server("baton", base_url, process, work, params, cleanup)


def start_cao(work: Path, executable: Path) -> Server:
    port = free_port()
    home = work / "cao-home"
    home.mkdir()
    # Panes start a login shell, whose profile resets PATH: put mock_cli back on it.
    # No shell history either: exiting shells would write it after the bench cleaned up.
    (home / ".bash_profile").write_text(f'export PATH="{MOCK_CLI_DIR}:$PATH"\nunset HISTFILE\n')
    tmux_dir = Path(tempfile.mkdtemp(prefix="cao-tmux-"))
    env = {
        **os.environ,
        "HOME": str(home),
        "CAO_HOME_DIR": str(home / "cao"),
        "TMUX_TMPDIR": str(tmux_dir),
        "PATH": f"{MOCK_CLI_DIR}:{os.environ.get('PATH', '')}",
    }
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    log = (work / "cao.log").open("wb")
    process = subprocess.Popen(
        [str(executable), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=home,
    )
    base_url = f"http://127.0.0.1:{port}"
    _wait_healthy(base_url, process, "/sessions")

    def cleanup() -> None:
        subprocess.run(
            ["tmux", "kill-server"], env={**env, "TMUX_TMPDIR": str(tmux_dir)}, capture_output=True
        )
        shutil.rmtree(tmux_dir, ignore_errors=True)

    project = work / "project"
    project.mkdir(exist_ok=True)
    params = {
        "provider": "mock_cli",
        "agent_profile": "developer",
        "working_directory": str(project),
    }
    return Server("cao-server", base_url, process, work, params, cleanup)


def create_terminals(server: Server, count: int, *, parallel: int = 8) -> float:
    """Create `count` terminals (each its own session); seconds it took."""

    def one(_: int) -> str | None:
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            created = client.post("/sessions", params=server.create_params)
            return created.json()["id"] if created.status_code == 201 else None

    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        made = [terminal for terminal in pool.map(one, range(count)) if terminal]
    server.terminals.extend(made)
    return time.perf_counter() - started


class RawConnection:
    """A keep-alive HTTP/1.1 connection that sends bare GETs: the lightest client, so
    the figures are the server's and not the HTTP library's."""

    def __init__(self, base_url: str) -> None:
        host, port = base_url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.sock = socket.create_connection((self.host, self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def get(self, path: str) -> int:
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(65536)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        length = _content_length(head)
        while len(self.buffer) < length:
            self.buffer += self.sock.recv(65536)
        self.buffer = self.buffer[length:]
        return int(head.split(b" ", 2)[1])

    def close(self) -> None:
        self.sock.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def idle_reads(server: Server, reads: int) -> list[float]:
    target = f"/terminals/{server.terminals[0]}"
    samples = []
    connection = RawConnection(server.base_url)
    try:
        for _ in range(20):  # warm up the connection and caches
            connection.get(target)
        for _ in range(reads):
            started = time.perf_counter()
            status = connection.get(target)
            samples.append(time.perf_counter() - started)
            if status != 200:
                raise SystemExit(f"{server.name}: GET {target} answered {status}")
    finally:
        connection.close()
    return samples


async def _raw_get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> int:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    await reader.readexactly(_content_length(head))
    return int(head.split(b" ", 2)[1])


async def _poll_all(server: Server, interval: float, seconds: float) -> tuple[list[float], int]:
    samples: list[float] = []
    failures = 0
    host, port = server.base_url.removeprefix("http://").split(":")
    stop = time.monotonic() + seconds

    async def poll(terminal: str, offset: float) -> None:
        nonlocal failures
        reader, writer = await asyncio.open_connection(host, int(port))
        await asyncio.sleep(offset)
        tick = time.monotonic()
        # Ends on the clock: a server slower than the interval gets fewer requests.
        while tick < stop and time.monotonic() < stop:
            started = time.perf_counter()
            try:
                if await _raw_get(reader, writer, f"/terminals/{terminal}") != 200:
                    failures += 1
            except (OSError, asyncio.IncompleteReadError):
                failures += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, int(port))
            samples.append(time.perf_counter() - started)
            tick += interval
            await asyncio.sleep(max(0.0, tick - time.monotonic()))
        writer.close()

    count = len(server.terminals)
    await asyncio.gather(*(poll(t, interval * i / count) for i, t in enumerate(server.terminals)))
    return samples, failures


def loaded_reads(server: Server, interval: float, seconds: float) -> tuple[list[float], int]:
    return asyncio.run(_poll_all(server, interval, seconds))


class LogWatch:
    """Timestamps the moment a marker first appears in a growing pane log (inotify)."""

    def __init__(self, path: Path, marker: bytes) -> None:
        self.path = path
        self.marker = marker
        self.seen_at: float | None = None
        self._offset = path.stat().st_size
        self._inotify = INotify()
        self._inotify.add_watch(path, inotify_flags.MODIFY)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stop = False
        self._thread.start()

    def _run(self) -> None:
        tail = b""
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            while not self._stop and self.seen_at is None:
                if not self._inotify.read(timeout=100):
                    continue
                tail = (tail + handle.read())[-4096:]
                if self.marker in tail:
                    self.seen_at = time.perf_counter()

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        self._inotify.close()


def baton_turn_ends(server: Server, turns: int) -> tuple[list[float], list[float]]:
    """Latency from the finished turn in the pane log to the SSE event and long poll."""
    terminal = server.terminals[0]
    log = server.work / "baton-state" / "terminals" / terminal / "pane.log"
    by_event: list[float] = []
    by_wait: list[float] = []
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        for turn in range(turns):
            use_stream = turn % 2 == 0
            watch = LogWatch(log, b"Worked for")
            arrived: list[float] = []
            if use_stream:
                listener = CompletedListener(server.base_url, terminal, timeout=60)
                client.post(f"/terminals/{terminal}/input", params={"message": f"turn {turn}"})
                if (at := listener.join(30)) is not None:
                    arrived.append(at)
            else:
                client.post(f"/terminals/{terminal}/input", params={"message": f"turn {turn}"})
                status = client.get(f"/terminals/{terminal}").json()["status"]
                while status != "completed":
                    status = client.get(
                        f"/terminals/{terminal}/status/wait",
                        params={"since": status, "timeout": 30},
                    ).json()["status"]
                arrived.append(time.perf_counter())
            watch.close()
            if watch.seen_at is not None and arrived:
                (by_event if use_stream else by_wait).append(arrived[0] - watch.seen_at)
    return by_event, by_wait


def run(server: Server, args: argparse.Namespace, count: int) -> dict[str, str]:
    results: dict[str, str] = {}
    took = create_terminals(server, 1)
    results["create (1 terminal)"] = f"{took:.2f} s"
    results["idle GET /terminals/{id}"] = _percentiles(idle_reads(server, args.idle_reads))
    if server.name == "baton":
        by_event, by_wait = baton_turn_ends(server, args.turns)
        results["turn end → SSE event"] = _percentiles(by_event)
        results["turn end → long poll"] = _percentiles(by_wait)
    took = create_terminals(server, count - 1, parallel=args.parallel)
    live = len(server.terminals)
    results[f"create (+{live - 1} terminals)"] = f"{took:.1f} s"
    started = time.monotonic()
    samples, failures = loaded_reads(server, args.interval, args.poll_seconds)
    rate = len(samples) / (time.monotonic() - started)
    results[f"{live} terminals, each GET every {args.interval:g}s"] = (
        f"{_percentiles(samples)}   {rate:.0f} req/s, {failures} failed"
    )
    return results


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="status-bench-"))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=200)
    parser.add_argument("--cao-terminals", type=int, default=None)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--parallel", type=int, default=16, help="terminals created at once")
    parser.add_argument("--poll-seconds", type=float, default=20.0)
    parser.add_argument("--idle-reads", type=int, default=500)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--cao", type=Path, default=ROOT / ".tools" / "cao" / "bin" / "cao-server")
    parser.add_argument("--skip-cao", action="store_true")
    args = parser.parse_args()

    table: dict[str, dict[str, str]] = {}
    with _workdir() as work:
        baton = start_baton(work)
        try:
            table["baton serve"] = run(baton, args, args.terminals)
        finally:
            baton.stop()
    if not args.skip_cao:
        if not args.cao.exists():
            print(f"cao-server not found at {args.cao}; run with --skip-cao", file=sys.stderr)
        else:
            with _workdir() as work:
                cao = start_cao(work, args.cao)
                try:
                    table["cao-server 2.5.4"] = run(cao, args, args.cao_terminals or args.terminals)
                finally:
                    cao.stop()
    for server_name, rows in table.items():
        print(f"\n{server_name}")
        for label, figure in rows.items():
            print(f"  {label:<40} {figure}")


if __name__ == "__main__":
    main()
