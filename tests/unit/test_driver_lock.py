"""One driver per state file: the lock, its record, a dead driver's lock taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from baton.errors import RunLockedError
from baton.orchestrator.driver_lock import DriverLock, current_driver, lock_path_for


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / ".tmp" / "state.json"


def test_a_second_lock_on_the_same_state_file_is_refused_naming_the_first(
    state_path: Path,
) -> None:
    with DriverLock(state_path), pytest.raises(RunLockedError) as refused:
        DriverLock(state_path).acquire()
    message = str(refused.value)
    assert f"pid {os.getpid()} on host " in message
    assert str(state_path) in message and "baton watch " in message
    assert "\n" not in message


def test_the_lock_is_free_again_after_release_and_its_record_emptied(state_path: Path) -> None:
    lock = DriverLock(state_path).acquire()
    assert current_driver(state_path) is not None
    lock.release()
    lock.release()  # idempotent
    assert current_driver(state_path) is None
    assert lock_path_for(state_path).read_text() == ""
    with DriverLock(state_path) as again:
        assert again.taken_over is None


def test_current_driver_names_the_holder(state_path: Path) -> None:
    assert current_driver(state_path) is None  # no lock file at all
    with DriverLock(state_path):
        driver = current_driver(state_path)
        assert driver is not None
        assert driver.pid == os.getpid()
        assert driver.command == sys.argv
    # A reader's instant of shared locking never blocks the next driver.
    assert current_driver(state_path) is None


def test_a_lock_left_by_a_killed_process_is_taken_over_with_its_record(state_path: Path) -> None:
    """The kernel frees the flock of a SIGKILLed holder; its record tells who it was."""
    script = (
        "import os, sys, signal\n"
        "from pathlib import Path\n"
        "from baton.orchestrator.driver_lock import DriverLock\n"
        "DriverLock(Path(sys.argv[1])).acquire()\n"
        "print('locked', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    holder = subprocess.run(
        [sys.executable, "-c", script, str(state_path)], capture_output=True, text=True
    )
    assert holder.stdout.strip() == "locked"
    left = json.loads(lock_path_for(state_path).read_text())
    assert current_driver(state_path) is None
    with DriverLock(state_path) as lock:
        assert lock.taken_over is not None
        assert lock.taken_over.pid == left["pid"] != os.getpid()


def test_the_lock_file_is_private(state_path: Path) -> None:
    with DriverLock(state_path):
        assert lock_path_for(state_path).stat().st_mode & 0o777 == 0o600
