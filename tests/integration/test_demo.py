"""`baton demo` from the command line: the real loop, real tmux, the scripted agent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.orchestrator.test_resume_hints import fresh_shell

pytestmark = pytest.mark.tmux


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("TMUX", "TMUX_PANE")}
    return subprocess.run(
        [sys.executable, "-m", "baton", "demo", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _row(stderr: str, label: str) -> str:
    """The value of a row of the demo's "Where to look" table."""
    found = re.search(rf"^  {re.escape(label)} +(.+)$", stderr, re.M)
    assert found, stderr
    return found.group(1)


def _socket_of(stderr: str) -> Path:
    found = re.search(r"tmux -S (\S+) attach", stderr)
    assert found, stderr
    return Path(found.group(1))


def test_demo_fixes_the_sample_project_in_two_rounds_and_cleans_up(tmp_path: Path) -> None:
    project = tmp_path / "sample"
    completed = _demo("--dir", str(project))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "round 1/8 · tester phase: RESULT: FAIL" in completed.stderr
    assert "round 2/8 · tester phase: RESULT: PASS" in completed.stderr
    assert "Where to look:" in completed.stderr
    # The commands it prints work as printed, in a fresh shell in another directory.
    status = fresh_shell(_row(completed.stderr, "where it stands"))
    assert status.returncode == 0, status.stderr
    assert "PASS" in status.stdout
    report = fresh_shell(_row(completed.stderr, "the report"))
    assert report.returncode == 0, report.stderr
    assert "report: " in report.stdout
    tester_answers = sorted(project.glob(".tmp/2*/*-tester.md"))
    assert [p.read_text().splitlines()[0] for p in tester_answers] == [
        "RESULT: FAIL",
        "RESULT: PASS",
    ]
    # The unit tests of the sample project pass after the demo, for real.
    check = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
        cwd=project,
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0
    # Nothing is left running: the private tmux server and its socket are gone.
    socket = _socket_of(completed.stderr)
    assert not socket.exists()
    assert not socket.parent.exists()


def test_demo_keep_leaves_the_agents_session_to_attach_to(tmp_path: Path) -> None:
    completed = _demo("--dir", str(tmp_path / "sample"), "--keep")
    socket = _socket_of(completed.stderr)
    try:
        assert completed.returncode == 0, completed.stderr[-3000:]
        assert f"tmux -S {socket} kill-server" in completed.stderr
        sessions = subprocess.run(
            ["tmux", "-S", str(socket), "list-sessions", "-F", "#{session_name}"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert sessions.stdout.startswith("cao-baton-"), sessions.stderr
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", str(socket.parent)], check=False)


def test_demo_dir_that_is_a_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a directory")
    completed = _demo("--dir", str(taken))
    assert completed.returncode == 2
    assert f"Invalid value for '--dir': Directory '{taken}' is a file." in completed.stderr
    assert taken.read_text() == "not a directory"


def test_demo_batch_fixes_three_features_in_parallel_each_on_its_branch(tmp_path: Path) -> None:
    completed = _demo("--batch", "--dir", str(tmp_path / "d"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "batch demo done: 3/3 PASS" in completed.stderr
    repo = tmp_path / "d" / "project"
    branches = subprocess.run(
        ["git", "-C", str(repo), "branch", "--format=%(refname:short)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(branches) == ["baton/clamp", "baton/median", "baton/slugify", "main"]
    for name in ("clamp", "median", "slugify"):
        test = subprocess.run(
            [sys.executable, "-m", "unittest", f"tests.test_{name}"],
            cwd=repo / ".baton" / "worktrees" / "demo" / name,
            capture_output=True,
            check=False,
        )
        assert test.returncode == 0
    listed = fresh_shell(_row(completed.stderr, "the batch"))
    assert listed.returncode == 0, listed.stderr
    assert "clamp" in listed.stdout and "PASS" in listed.stdout
    socket = re.search(r"tmux -S (\S+)\)", completed.stderr)
    assert socket, completed.stderr
    assert not Path(socket.group(1)).parent.exists()  # the batch's server and tmux are gone
