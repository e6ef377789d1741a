"""A host's `baton serve` outlives the process that started it: a Ray worker kills its
direct children as it exits, and the next job on the host must find the server up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from baton.batch.host_server import ensure_host_server, stop_host_server

pytestmark = pytest.mark.tmux

_STARTER = """
import sys
from pathlib import Path
from baton.batch.host_server import ensure_host_server
print(ensure_host_server(Path(sys.argv[1])), flush=True)
sys.stdin.read()
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def test_the_host_server_outlives_the_job_that_started_it(tmp_path: Path) -> None:
    work_root = tmp_path / "host"
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER, str(work_root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout is not None and starter.stdin is not None
        url = starter.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        for child in _children(starter.pid):  # what a Ray worker does as it exits
            os.kill(child, signal.SIGKILL)
        starter.stdin.close()
        assert starter.wait(timeout=30) == 0
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        assert ensure_host_server(work_root) == url  # the next job finds it: no second one
    finally:
        starter.kill()
        starter.wait()
        stop_host_server(work_root)
