"""Both halves together: `baton run` drives `baton serve` (real tmux, the scripted agent).

The sample project's scripted agents do real work: the first patch leaves a unit test
failing (a real FAIL from the tester), the second fixes it (a real PASS).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.run_env import scripted_run_env
from tests.support.server import ServerProcess

from baton.demo.sample import write_sample_project

pytestmark = pytest.mark.tmux


def test_two_rounds_against_baton_serve(baton_server: ServerProcess, tmp_path: Path) -> None:
    project = write_sample_project(tmp_path / "project")
    env = scripted_run_env(baton_server.base_url, project)
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "round 1/8 · tester phase: RESULT: FAIL" in completed.stderr
    assert "round 2/8 · tester phase: RESULT: PASS" in completed.stderr
    archives = sorted((project.root / ".tmp").glob("2*/*-tester.md"))
    assert [p.read_text().splitlines()[0] for p in archives] == ["RESULT: FAIL", "RESULT: PASS"]
    # The unit tests of the sample project really pass now.
    check = subprocess.run(
        project.test_command, shell=True, cwd=project.root, capture_output=True, check=False
    )
    assert check.returncode == 0


def test_a_run_in_a_directory_named_like_a_tmux_format_works_there(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """tmux would expand `#{pane_pid}` in a start directory; the agents must work in
    exactly this directory, not in one tmux made up (nor in its parent)."""
    parent = tmp_path / "work"
    project = write_sample_project(parent / "proj #{pane_pid} x")
    env = scripted_run_env(baton_server.base_url, project)
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "tester phase: RESULT: PASS" in completed.stderr
    assert sorted(path.name for path in parent.iterdir()) == ["proj #{pane_pid} x"]
    archives = sorted((project.root / ".tmp").glob("2*/*-tester.md"))
    assert archives and archives[-1].read_text().startswith("RESULT: PASS")
    check = subprocess.run(
        project.test_command, shell=True, cwd=project.root, capture_output=True, check=False
    )
    assert check.returncode == 0
