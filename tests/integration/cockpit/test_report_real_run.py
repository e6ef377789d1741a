"""`baton report` on a real run (scripted agents under `baton serve`, a git WD)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from tests.integration.cockpit.conftest import FinishedRun
from tests.support.browser import dump_dom

pytestmark = pytest.mark.tmux


def test_report_of_a_real_run_has_every_turn_and_the_change(finished_run: FinishedRun) -> None:
    head = subprocess.run(
        ["git", "-C", str(finished_run.wd), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = next(finished_run.wd.glob(".tmp/2*/events.jsonl")).parent
    events = [json.loads(line) for line in (archive / "events.jsonl").open()]
    assert events[0]["event"] == "run_start" and events[0]["git_head"] == head

    completed = subprocess.run(
        [sys.executable, "-m", "baton", "report", str(finished_run.state_path)],
        env=finished_run.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    turns = sum(1 for event in events if event["event"] == "prompt_sent")
    assert re.match(rf"PASS in round 2, \S+, {turns} turns$", lines[0])
    assert "  round 1: FAIL — RESULT: FAIL" in lines
    assert "  round 2: PASS — RESULT: PASS" in lines
    assert any(line.startswith("  change: 1 file changed") for line in lines), lines
    assert lines[-1] == f"report: {archive / 'report.html'}"

    dom = dump_dom(archive / "report.html")
    assert len(re.findall(r'<rect class="bar"', dom)) == turns
    assert "stats/median.py" in dom
    assert dom.count('class="review"') == sum(1 for e in events if e["event"] == "gate")
    assert ">RESULT: FAIL</span>" in dom and ">RESULT: PASS</span>" in dom
    # The scripted agent reports its own tokens: one record a turn, summed in the summary.
    tokens = [event for event in events if event["event"] == "tokens"]
    assert len(tokens) == turns
    total_in = sum(event["input_tokens"] for event in tokens)
    assert any(line.startswith(f"  tokens: {total_in:,} in") for line in lines), lines
    assert "No token records in this run" not in dom and f"{total_in:,}" in dom


def test_status_after_the_pass_is_truthful_and_live(finished_run: FinishedRun) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "baton", "status", str(finished_run.state_path)],
        env=finished_run.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "status:     PASS: finished in round 2" in out
    assert "last test:  round 2: RESULT: PASS" in out
    assert "FAIL" not in out
    assert "agents:     (live)" in out
    assert len(re.findall(r"^  \w+\s+[0-9a-f]{8}\s+(idle|completed)$", out, re.M)) == 5


def test_answer_text_is_typed_and_submitted_when_forced(finished_run: FinishedRun) -> None:
    tester = json.loads(finished_run.state_path.read_text())["terminals"]["tester"]

    def answer(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "baton", "answer", "tester", *args],
            env={**finished_run.env, "STATE_FILE": str(finished_run.state_path)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    refused = answer("please also list the slow tests")
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"baton: error: tester (terminal {tester}) is ")
    sent = answer("please also list the slow tests", "--force")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith(f"typed 31 characters in tester (terminal {tester}); ")
    with finished_run.server.client() as client:
        screen = client.get(f"/terminals/{tester}/output", params={"mode": "full"}).json()
    assert "please also list the slow tests" in screen["output"]
    nothing = answer("--force")
    assert nothing.returncode == 1
    assert nothing.stderr.strip() == "baton: error: nothing to send: give TEXT and/or --key KEY"
    unknown = subprocess.run(
        [sys.executable, "-m", "baton", "answer", "boss", "hi"],
        env={**finished_run.env, "STATE_FILE": str(finished_run.state_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        "baton: error: unknown role 'boss'; use one of analyst, peer_analyst, programmer, "
        "peer_programmer, tester"
    )
