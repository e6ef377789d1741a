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
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

from baton.batch.file_lock import exclusive_lock
from baton.batch.host_forks import stop_host_forks
from baton.batch.host_process import alive, end, socket_dir, spawn_detached
from baton.batch.server import free_port
from baton.errors import ApiUnreachableError

__all__ = ["ensure_host_server", "stop_host_server"]

_STARTUP_SECONDS = 30.0
_RECORD = "server.json"


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
    sockets = socket_dir(work_root)
    sockets.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "BATON_TMUX_SOCKET": str(sockets / "tmux.sock")}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    state_dir = work_root / "server"
    state_dir.mkdir(parents=True, exist_ok=True)
    for _attempt in range(3):
        port = free_port()
        command = [sys.executable, "-m", "baton", "serve", "--port", str(port)]
        try:
            pid = spawn_detached(
                [*command, "--state-dir", str(state_dir)], env, work_root / "server.log"
            )
        except OSError as error:
            raise ApiUnreachableError(f"this host's baton serve did not start: {error}") from None
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + _STARTUP_SECONDS
        while time.monotonic() < deadline and alive(pid):
            if _healthy(url):
                text = json.dumps({"port": port, "pid": pid})
                (work_root / _RECORD).write_text(text, encoding="utf-8")
                return url
            time.sleep(0.1)
        end(pid)
    raise ApiUnreachableError(f"this host's baton serve did not start; see {work_root}/server.log")


def stop_host_server(work_root: Path) -> None:
    """Stop this host's server, if any, its tmux server (every agent left in it) and its
    fork servers (every loop left in them)."""
    record = _record(work_root)
    if record:
        end(record["pid"])
        with contextlib.suppress(OSError):
            (work_root / _RECORD).unlink()
    stop_host_forks(work_root)
    sockets = socket_dir(work_root)
    subprocess.run(
        ["tmux", "-S", str(sockets / "tmux.sock"), "kill-server"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    shutil.rmtree(sockets, ignore_errors=True)
