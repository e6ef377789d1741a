"""A run started from one sentence: `baton run "…" --test CMD` against `baton serve`.

The sample project's scripted agents do real work (a wrong patch and a real FAIL, then
the fix and a real PASS); the request is only a sentence and the test command. Every
command the run prints then works from another directory in a fresh shell.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.orchestrator.test_resume_hints import fresh_shell
from tests.support.run_env import scripted_run_env
from tests.support.server import ServerProcess

from baton.demo.sample import write_sample_project
from baton.orchestrator.prompts import EXPLORE_MARKER, SCENARIO_MARKER

pytestmark = pytest.mark.tmux

REQUEST = "Fix median in the stats package so that every unit test passes"


def test_a_sentence_and_a_test_command_run_to_pass(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    project = write_sample_project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = scripted_run_env(baton_server.base_url, project, PROMPT=None, CLEANUP_ON_EXIT="0")
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "run", REQUEST, "--test", project.test_command],
        cwd=elsewhere,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "round 1/8 · tester phase: RESULT: FAIL" in completed.stderr
    assert "round 2/8 · tester phase: RESULT: PASS" in completed.stderr

    state_path = project.root / ".tmp" / "codex-3agents-loop-state.json"
    state = json.loads(state_path.read_text(encoding="utf-8"))
    lines = state["prompt"].splitlines()
    assert lines[0] == REQUEST
    assert EXPLORE_MARKER in lines and SCENARIO_MARKER in lines
    assert f"In the project directory run: {project.test_command}" in lines
    assert state["command"]["argv"] == ["run", REQUEST, "--test", project.test_command]
    # The tester was asked to run exactly the given test command.
    tester_prompts = sorted((project.root / ".tmp").glob("2*/*-tester-prompt.md"))
    assert len(tester_prompts) == 2
    assert project.test_command in tester_prompts[-1].read_text(encoding="utf-8")

    # Every command the run printed works as printed, from another directory.
    printed = dict(
        re.findall(
            r"(watch the agents live|attach to the analyst|after the run): (.+)$",
            completed.stderr,
            re.M,
        )
    )
    assert set(printed) == {"watch the agents live", "attach to the analyst", "after the run"}
    watch = fresh_shell(f"{printed['watch the agents live']} --once")
    assert watch.returncode == 0, watch.stderr
    assert "PASS in round 2" in watch.stdout
    attach_analyst = printed["attach to the analyst"].split("  (or ")[0]
    attach = fresh_shell(f"{attach_analyst} --print")
    assert attach.returncode == 0, attach.stderr
    assert attach.stdout.startswith("tmux -S ")
    report = fresh_shell(printed["after the run"])
    assert report.returncode == 0, report.stderr
    assert "PASS in round 2" in report.stdout
