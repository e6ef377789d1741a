"""The commands a run prints work as printed: from another directory, in a fresh shell.

The resume hint repeats how the run was started (a config file named relative to where
it was started, an option, the settings from the environment) and resumes the run; a
usage error gets no resume hint.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.integration.orchestrator.conftest import Project, wait_until
from tests.integration.orchestrator.fake_cao import Turn, answer_plan


def _slow_first_programmer(turn: Turn) -> list:
    return answer_plan(turn, work=2.0 if turn.count == 1 else 0.1)


def fresh_shell(line: str, cwd: Path = Path("/")) -> subprocess.CompletedProcess[str]:
    """`line` in bash with none of the run's settings in the environment."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _hint(stderr: str, label: str) -> str:
    found = re.findall(rf"{re.escape(label)}(.+)$", stderr, re.M)
    assert len(found) == 1, stderr
    return found[0].strip()


def test_the_resume_hint_repeats_the_start_and_resumes_from_anywhere(
    project: Project, tmp_path: Path
) -> None:
    started_in = tmp_path / "my configs"
    started_in.mkdir()
    (started_in / "loop.json").write_text(json.dumps({"limits": {"max_rounds": 2}}))
    project.cao.behaviour["programmer"] = _slow_first_programmer
    log = tmp_path / "first.stderr"
    argv = ["run", "loop.json", "--max-review-cycles", "2"]
    with log.open("w") as stderr:
        first = subprocess.Popen(
            [sys.executable, "-m", "baton", *argv],
            cwd=started_in,
            env=project.env,
            stdin=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        wait_until(lambda: project.awaiting_role() == "programmer")
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=120) == 130
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    text = log.read_text()
    assert project.state()["command"]["argv"] == argv
    hint = _hint(text, "resume with: ")
    assert hint.startswith(f"cd {shlex.quote(str(started_in))} && ")
    assert hint.endswith(" run loop.json --max-review-cycles 2")
    assert f"WD={shlex.quote(str(project.wd))}" in hint  # the settings the environment gave
    assert " PROMPT=" not in hint  # the state file keeps the prompt

    resumed = fresh_shell(hint)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the run" in resumed.stderr
    assert project.state()["final_status"] == "PASS"
    assert len(project.cao.posts("/sessions")) == 1  # the same run, not a new one

    # The other commands the run printed work from anywhere too.
    watch = _hint(text, "watch the agents live: ")
    shown = fresh_shell(f"{watch} --once")
    assert shown.returncode == 0, shown.stderr
    assert "PASS in round" in shown.stdout
    report = fresh_shell(_hint(text, "after the run: "))
    assert report.returncode == 0, report.stderr
    assert "report: " in report.stdout


def test_a_usage_error_gets_no_resume_hint(project: Project) -> None:
    project.cao.refuse_profiles = {"peer_programmer"}
    project.cao.refuse_status = 400
    run = project.run()
    assert run.returncode == 1
    assert project.state()["final_status"] == "RUNNING"
    assert "resume with" not in run.stderr
    assert "fix the error below before running again" in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("baton: error:")]
    assert len(errors) == 1 and "HTTP 400" in errors[0]
