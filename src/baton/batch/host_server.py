"""One `baton serve` per host for feature jobs: started on demand, shared, outliving a job.

Jobs on a host share its work root. The first job that needs a server starts one (under
`server.lock`) in its own session and not as its child, so it outlives the job and the
Ray worker that ran it (a job killed mid-loop leaves the agents where a rerun on this
host adopts them; the next batch finds the server up), on a free loopback port with a private
tmux socket, and writes `server.json` (port, pid); later jobs reuse it while /health
answers. While a job's loop runs, `HostServerKeeper` brings a server that died back on
the same port, so the loop's `API` stays right: the loop waits out the outage
(`SERVER_OUTAGE_SECONDS`) and the new server adopts the agents from its registry, where
otherwise the loop would wait the whole outage, lease held, then end in error.
`stop_host_server` ends it and its tmux server (a worker leaving, or a test).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from baton.batch.file_lock import exclusive_lock
from baton.batch.host_forks import stop_host_forks
from baton.batch.host_process import alive, end, socket_dir, spawn_detached
from baton.batch.server import free_port
from baton.errors import ApiUnreachableError

__all__ = ["HostServerKeeper", "ensure_host_server", "stop_host_server"]

_STARTUP_SECONDS = 30.0
_RECORD = "server.json"
_KEEPER_SECONDS = 1.0  # how often a running job looks whether its host's server still runs

logger = logging.getLogger(__name__)


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
    """The base URL of this host's server, started now if none answers (on the port of
    the one before, if it is free: loops still hold that URL)."""
    with exclusive_lock(work_root / "server.lock"):
        record = _record(work_root)
        if record and _healthy(f"http://127.0.0.1:{record['port']}"):
            return f"http://127.0.0.1:{record['port']}"
        return _start(work_root, record.get("port"))


class HostServerKeeper:
    """While a job's loop runs: a thread that starts this host's server again if it died.

    Only a server that is recorded and whose process has ended is replaced; one stopped on
    purpose (`stop_host_server` removes the record) stays stopped.
    """

    def __init__(self, work_root: Path, interval: float = _KEEPER_SECONDS) -> None:
        self.work_root = work_root
        self.interval = interval
        self.restarts = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="host-server-keeper", daemon=True)

    def __enter__(self) -> HostServerKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stopped.wait(self.interval):
            record = _record(self.work_root)
            if not record or alive(record["pid"]):
                continue
            try:
                url = _start_again(self.work_root, record["pid"])
            except (ApiUnreachableError, OSError) as error:
                logger.warning("this host's baton serve died and did not start again: %s", error)
                continue
            if url is not None:
                self.restarts += 1
                logger.warning(
                    "this host's baton serve (pid %d) died; started again at %s", record["pid"], url
                )


def _start_again(work_root: Path, dead: int) -> str | None:
    """Start the server again if the record still names the dead `dead` (under the lock
    `stop_host_server` takes too: a server stopped on purpose is not brought back)."""
    with exclusive_lock(work_root / "server.lock"):
        record = _record(work_root)
        if record.get("pid") != dead or alive(dead):
            return None
        return _start(work_root, record["port"])


def _start(work_root: Path, port: int | None = None) -> str:
    sockets = socket_dir(work_root)
    sockets.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "BATON_TMUX_SOCKET": str(sockets / "tmux.sock")}
    for name in ("TMUX", "TMUX_PANE"):
        env.pop(name, None)
    state_dir = work_root / "server"
    state_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        port = port if attempt == 0 and port else free_port()
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
    record = {}
    if work_root.is_dir():
        with exclusive_lock(work_root / "server.lock"):
            record = _record(work_root)
            with contextlib.suppress(OSError):
                (work_root / _RECORD).unlink()  # first: no keeper starts it again
    if record:
        end(record["pid"])
    stop_host_forks(work_root)
    sockets = socket_dir(work_root)
    subprocess.run(
        ["tmux", "-S", str(sockets / "tmux.sock"), "kill-server"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    shutil.rmtree(sockets, ignore_errors=True)
