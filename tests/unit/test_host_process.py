"""Whether a host's daemon still runs: it is no child of the process that asks."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.waiting import wait_until

from baton.batch.host_process import alive


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_running_process_is_alive_and_an_ended_unreaped_one_is_not() -> None:
    """Where the first process of a container does not reap orphans, an ended server
    stays a zombie: it has ended all the same."""
    running = subprocess.Popen(["sleep", "30"])
    ended = subprocess.Popen(["true"])
    try:
        assert alive(running.pid)
        wait_until(lambda: _state(ended.pid) == "Z")  # ended, not reaped yet
        assert not alive(ended.pid)
    finally:
        running.kill()
        running.wait()
        ended.wait()
    assert not alive(ended.pid)  # reaped: gone
