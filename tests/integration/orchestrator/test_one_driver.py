"""One driver per run: a second `baton run` on a live run's state file stops at once."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

from tests.integration.orchestrator.conftest import Project, wait_until
from tests.integration.orchestrator.fake_cao import Turn, answer_plan


def _slow_programmer(turn: Turn) -> list:
    return answer_plan(turn, work=6.0 if turn.count == 1 else 0.1)


def _programmer_held_by(release: threading.Event) -> Callable[[Turn], list]:
    """The programmer's first turn lasts until the test releases it (however slow the
    machine: a fixed time ran out while the second run was still starting)."""

    def plan(turn: Turn) -> list:
        steps = answer_plan(turn, work=0.1)
        return [("status", "processing"), ("until", release), *steps] if turn.count == 1 else steps

    return plan


def _status(project: Project) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "baton", "status", str(project.state_file)],
        env=project.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_second_run_three_seconds_later_is_refused_and_the_first_finishes(
    project: Project,
) -> None:
    release = threading.Event()
    project.cao.behaviour["programmer"] = _programmer_held_by(release)
    first = project.start()
    time.sleep(3)
    # The prompt itself, not only the saved position: the position is saved before the
    # prompt is sent, and a loaded machine can put a second between the two.
    wait_until(lambda: any(role == "programmer" for role, _ in project.cao.inputs()))
    prompts_before = len(project.cao.inputs())
    state_before = project.state_file.read_bytes()

    second = project.run()
    assert second.returncode == 1
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, second.stderr
    assert f"pid {first.process.pid} on host " in lines[0]
    assert f"-m baton watch {project.state_file}" in lines[0]  # runnable as printed
    # It read and wrote nothing: no prompt, no saved position, no error in the first's record.
    assert len(project.cao.inputs()) == prompts_before
    assert project.state_file.read_bytes() == state_before
    assert f"driver:     baton run pid {first.process.pid} on host " in _status(project)

    release.set()
    assert first.wait() == 0, first.stderr
    assert project.state()["final_status"] == "PASS"
    assert "RunLocked" not in first.stderr and "error" not in first.stderr
    # Exactly one uninterrupted run's prompts (REVISE then APPROVED per phase, one test).
    assert len(project.cao.inputs()) == 9
    assert "driver:     none" in _status(project)


def test_a_run_killed_with_sigkill_leaves_a_lock_the_next_run_takes_over(
    project: Project,
) -> None:
    project.cao.behaviour["programmer"] = _slow_programmer
    first = project.start()
    wait_until(lambda: project.awaiting_role() == "programmer")
    first.send_signal(9)
    first.wait()

    resumed = project.run()
    assert resumed.returncode == 0, resumed.stderr
    assert (
        f"warning: taking over {project.state_file} from the baton run that drove it "
        f"(pid {first.process.pid} on host "
    ) in resumed.stderr
    assert "which is no longer running" in resumed.stderr
    assert project.state()["final_status"] == "PASS"
