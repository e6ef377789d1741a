"""A loop a killed batch left on its feature's state file: stopped, or only waited for.

The holder is a real process holding the real driver lock; nothing here starts tmux or a
server.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.batch.leftover_loop import (
    LOOP_MARK_NAME,
    LeftoverWait,
    record_loop,
    wait_for_previous_driver,
)
from baton.errors import StateFileError
from baton.orchestrator.driver_lock import current_driver

QUICK = LeftoverWait(terminate_after=0.2, kill_after=1.0, give_up_after=10.0, poll=0.05)

_HOLDER = """
import signal, sys, time
from pathlib import Path
from baton.orchestrator.driver_lock import DriverLock
if sys.argv[2] == "deaf":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stuck: only SIGKILL ends it
DriverLock(Path(sys.argv[1])).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def _hold(state_file: Path, child_processes: list[subprocess.Popen[str]], mode: str) -> int:
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(state_file), mode], stdout=subprocess.PIPE, text=True
    )
    child_processes.append(process)
    assert process.stdout is not None and process.stdout.readline().strip() == "locked"
    return process.pid


@pytest.mark.parametrize("mode", ["polite", "deaf"])
def test_the_loop_this_batch_left_is_stopped_and_the_state_file_freed(
    tmp_path: Path, child_processes: list[subprocess.Popen[str]], mode: str
) -> None:
    state_file = tmp_path / ".tmp" / "state.json"
    state_file.parent.mkdir()
    pid = _hold(state_file, child_processes, mode)
    record_loop(state_file, pid)
    wait_for_previous_driver(state_file, QUICK)
    assert current_driver(state_file) is None
    assert child_processes[0].wait(timeout=10) < 0  # ended by a signal: SIGTERM, or SIGKILL if deaf


def test_someone_elses_run_is_only_waited_for(
    tmp_path: Path, child_processes: list[subprocess.Popen[str]]
) -> None:
    state_file = tmp_path / ".tmp" / "state.json"
    state_file.parent.mkdir()
    record_loop(state_file, 1)  # the batch's own loop was another process
    pid = _hold(state_file, child_processes, "polite")
    patient = LeftoverWait(terminate_after=0.0, kill_after=0.0, give_up_after=1.0, poll=0.05)
    with pytest.raises(StateFileError, match=f"still driven by pid {pid}"):
        wait_for_previous_driver(state_file, patient)
    assert child_processes[0].poll() is None  # never signalled


def test_a_recorded_pid_now_held_by_a_later_process_is_not_signalled(
    tmp_path: Path, child_processes: list[subprocess.Popen[str]]
) -> None:
    state_file = tmp_path / ".tmp" / "state.json"
    state_file.parent.mkdir()
    pid = _hold(state_file, child_processes, "polite")
    # The batch's loop had this pid an hour ago; the process holding it now started later.
    mark = {"pid": pid, "host": socket.gethostname(), "at": time.time() - 3600}
    (state_file.parent / LOOP_MARK_NAME).write_text(json.dumps(mark), encoding="utf-8")
    patient = LeftoverWait(terminate_after=0.0, kill_after=0.0, give_up_after=1.0, poll=0.05)
    with pytest.raises(StateFileError):
        wait_for_previous_driver(state_file, patient)
    assert child_processes[0].poll() is None
