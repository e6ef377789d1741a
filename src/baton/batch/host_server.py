"""One `baton serve` per host for feature jobs: started on demand, shared, outliving a job.

Jobs on a host share its work root. The first job that needs a server starts one (under
`server.lock`) in its own session and not as its child, so it outlives the job and the
Ray worker that ran it (a job killed mid-loop leaves the agents where a rerun on this
host adopts them; the next batch finds the server up), on a free loopback port with a private
tmux socket, and writes `server.json` (port, pid); later jobs reuse it while /health
answers. `stop_host_server` ends it and its tmux server (a worker leaving, or a test).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from baton.batch.file_lock import exclusive_lock
from baton.batch.server import free_port
from baton.errors import ApiUnreachableError

__all__ = ["ensure_host_server", "stop_host_server"]

_STARTUP_SECONDS = 30.0
_RECORD = "server.json"


def _socket_dir(work_root: Path) -> Path:
    digest = hashlib.sha256(str(work_root.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"baton-host-{os.getuid()}-{digest}"


def _healthy(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    return False


def _record(work_root: Path) -> dict[str, int]:
    try:
        data = json.loads((work_root / _RECORD).read_text(encoding="utf-8"))
        return {"port": int(data["port"]), "pid": int(data["pid"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def ensure_host_server(work_root: Path) -> str:
    """The base URL of this host's server, started now if none answers."""
    with exclusive_lock(work_root / "server.lock"):
        record = _record(work_root)
        if record and _healthy(f"http://127.0.0.1:{record['port']}"):
            return f"http://127.0.0.1:{record['port']}"
        return _start(work_root)


def _start(work_root: Path) -> str:
    socket_dir = _socket_dir(work_root)
    socket_dir.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "BATON_TMUX_SOCKET": str(socket_dir / "tmux.sock")}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    state_dir = work_root / "server"
    state_dir.mkdir(parents=True, exist_ok=True)
    for _attempt in range(3):
        port = free_port()
        command = [sys.executable, "-m", "baton", "serve", "--port", str(port)]
        pid = _spawn_detached([*command, "--state-dir", str(state_dir)], env, work_root)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + _STARTUP_SECONDS
        while time.monotonic() < deadline and _alive(pid):
            if _healthy(url):
                text = json.dumps({"port": port, "pid": pid})
                (work_root / _RECORD).write_text(text, encoding="utf-8")
                return url
            time.sleep(0.1)
        _end(pid)
    raise ApiUnreachableError(f"this host's baton serve did not start; see {work_root}/server.log")


# Run by a short-lived launcher: the server it starts is its child, not the job's.
_LAUNCHER = """
import subprocess, sys
with open(sys.argv[1], "ab") as log:
    server = subprocess.Popen(
        sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
print(server.pid)
"""


def _spawn_detached(command: list[str], env: dict[str, str], work_root: Path) -> int:
    """Start the server as a grandchild in a session of its own; its pid.

    A Ray worker kills its direct children when it exits (Ray's
    RAY_kill_child_processes_on_worker_exit, on by default): the host's server went with
    it, and the next batch's jobs started another. Started by a launcher that exits at
    once, the server belongs to no job (docs/batch.md: the one Ray setting that still
    ends it).
    """
    try:
        launched = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(work_root / "server.log"), *command],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return int(launched.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        raise ApiUnreachableError(f"this host's baton serve did not start: {error}") from None


def _alive(pid: int) -> bool:
    """True while `pid` runs. The server is no child of ours, so nothing here reaps it; an
    ended one is gone once its parent (init, or a container's first process) reaps it, and
    a zombie until then, which counts as ended."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _end(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _tick in range(150):
            if not _alive(pid):
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def stop_host_server(work_root: Path) -> None:
    """Stop this host's server, if any, and its tmux server (every agent left in it)."""
    record = _record(work_root)
    if record:
        _end(record["pid"])
        with contextlib.suppress(OSError):
            (work_root / _RECORD).unlink()
    socket_dir = _socket_dir(work_root)
    subprocess.run(
        ["tmux", "-S", str(socket_dir / "tmux.sock"), "kill-server"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    shutil.rmtree(socket_dir, ignore_errors=True)
