"""CAO 2.5.4's `cao` CLI against `baton serve` and real Codex: launch, session send, handoff.

`cao` runs from CAO's own virtualenv and finds the server through CAO_API_HOST/PORT;
the agents are real Codex CLIs answering from the scripted model server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.cao.rig import CaoRig, cao_rig, response_prompt

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[CaoRig]:
    with cao_rig(tmp_path) as rig:
        yield rig


def test_launch_headless_then_session_send_then_agent_handoff(rig: CaoRig) -> None:
    # cao launch --headless MESSAGE: creates the session, waits, prints the answer.
    first = response_prompt(rig.project, "analyst_summary.md", "Analyse the failing test.")
    launched = rig.cao.cli(
        "launch",
        "--agents",
        "system_analyst",
        "--provider",
        "codex",
        "--headless",
        "--auto-approve",
        "--working-directory",
        str(rig.project),
        first,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    session = re.search(r"Session created: (\S+)", launched.stdout)
    assert session, launched.stdout
    answer = rig.response_file("analyst_summary.md").read_text(encoding="utf-8")
    assert answer.startswith("ANALYST_SUMMARY")
    assert answer.strip() in launched.stdout
    conductor = rig.client.get(f"/sessions/{session[1]}/terminals").json()[0]
    assert conductor["provider"] == "codex" and conductor["agent_profile"] == "system_analyst"
    # The tool list `cao launch` resolved is recorded as sent (CAO's MCP tools check it).
    assert "@cao-mcp-server" in conductor["allowed_tools"]

    # cao session send: types into the session's conductor, waits, prints the answer.
    second = response_prompt(rig.project, "analyst_review.md", "Review your analysis.")
    sent = rig.cao.cli("session", "send", session[1], second)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    review = rig.response_file("analyst_review.md").read_text(encoding="utf-8")
    assert review.strip() in sent.stdout

    # cao agent handoff, from inside the conductor: a worker in its session, prompted,
    # waited for, its answer printed, and the worker deleted.
    handed = rig.cao.cli("agent", "handoff", "tester", "Say READY.", terminal_id=conductor["id"])
    assert handed.returncode == 0, handed.stdout + handed.stderr
    worker = re.search(r"terminal_id: ([0-9a-f]{8})", handed.stderr)
    assert worker, handed.stderr
    # The model's real reply quotes the first line it read: CAO's handoff banner.
    assert "READY. (No response file was named; I read: [CAO Handoff]" in handed.stdout
    assert f"Supervisor terminal ID: {conductor['id']}" in handed.stdout
    assert rig.client.get(f"/terminals/{worker[1]}").status_code == 404
    assert rig.client.get(f"/terminals/{conductor['id']}").status_code == 200
