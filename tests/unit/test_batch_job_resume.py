"""A feature whose loop a killed batch left finishes while the new driver waits for it.

Real git (the feature's worktree), a real process holding the state file's driver lock
that writes the final state as it ends; no tmux, no server. The job must take that end
as the feature's outcome, start no second loop, and close the left loop's session.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import pytest

from baton.batch.job import FeatureJob, run_local
from baton.batch.launch import LoopProcess
from baton.batch.worktrees import ensure_worktree

_LEFT_LOOP = """
import json, sys, time
from pathlib import Path
from baton.orchestrator.driver_lock import DriverLock
state = Path(sys.argv[1])
lock = DriverLock(state)
lock.acquire()
print("locked", flush=True)
time.sleep(0.5)  # its last turn and the agents' exit
final = {"session_name": "cao-left", "current_round": 2, "final_status": "PASS",
         "exit_complete": True}
state.write_text(json.dumps(final), encoding="utf-8")
"""


class _NoNewLoop:
    def launch(
        self, command: Sequence[str], env: Mapping[str, str], cwd: str, log: BinaryIO
    ) -> LoopProcess:
        raise AssertionError("a second loop was started for a finished feature")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (root / "README").write_text("x\n", encoding="utf-8")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)
    return root


def test_a_left_loop_that_finishes_meanwhile_is_the_outcome_and_its_session_is_closed(
    repo: Path, tmp_path: Path, child_processes: list[subprocess.Popen[str]]
) -> None:
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    worktree = tmp_path / "worktrees" / "f"
    job = FeatureJob("f", str(repo), head, "baton/f", str(worktree), "Fix it.", env={})
    ensure_worktree(repo, worktree, job.branch, job.base)
    job.state_file.parent.mkdir(parents=True, exist_ok=True)
    job.state_file.write_text(json.dumps({"final_status": "RUNNING"}), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-c", _LEFT_LOOP, str(job.state_file)], stdout=subprocess.PIPE, text=True
    )
    child_processes.append(process)
    assert process.stdout is not None and process.stdout.readline().strip() == "locked"

    outcome, close_session = run_local(job, None, None, launcher=_NoNewLoop())

    assert (outcome.status, outcome.detail) == ("PASS", "already finished"), outcome
    assert close_session
