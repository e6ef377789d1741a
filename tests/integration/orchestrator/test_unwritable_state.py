"""A state folder that stops taking writes mid-run: the run says its last state is intact,
and a rerun, once the folder is writable, resumes from it to PASS."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.orchestrator.conftest import Project, wait_until
from tests.integration.orchestrator.fake_cao import Turn, answer_plan


def _immutable(path: Path, on: bool) -> bool:
    """`chattr ±i`: no new entry in `path`, for root too (True when the filesystem allows it)."""
    if shutil.which("chattr") is None:
        return False
    flag = "+i" if on else "-i"
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def frozen_dirs() -> Iterator[list[Path]]:
    frozen: list[Path] = []
    yield frozen
    for path in frozen:
        _immutable(path, False)


def _slow_programmer(turn: Turn) -> list:
    return answer_plan(turn, work=1.5 if turn.count == 1 else 0.1)


def test_a_state_folder_that_stops_taking_writes_keeps_the_last_state_and_resumes(
    project: Project, frozen_dirs: list[Path]
) -> None:
    project.cao.behaviour["programmer"] = _slow_programmer
    run = project.start()
    wait_until(lambda: project.awaiting_role() == "programmer")
    folder = project.state_file.parent
    if not _immutable(folder, True):
        run.wait()
        pytest.skip("this filesystem has no immutable flag (chattr +i)")
    frozen_dirs.append(folder)
    saved = project.state()

    assert run.wait() == 1
    notes = [line for line in run.stderr.splitlines() if "is intact" in line]
    assert len(notes) == 1, run.stderr
    assert f"cannot write the state file {project.state_file}" in notes[0]
    assert f"the last saved state (round 1, phase {saved['current_phase']}, saved " in notes[0]
    assert "can be written again, resume with: cd " in notes[0]
    assert "nothing to resume" not in run.stderr
    assert project.state() == saved

    _immutable(folder, False)
    resumed = project.run()
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the run" in resumed.stderr
    assert project.state()["final_status"] == "PASS"
