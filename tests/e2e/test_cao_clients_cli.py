"""CAO 2.5.4's `cao` CLI against `baton serve`: launch, session send, handoff, status, cancel.

`cao` runs from CAO's own virtualenv and finds the server through CAO_API_HOST/PORT;
the agents are real Codex CLIs answering from the scripted model server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.cao.clients import CaoClients, require_cao
from tests.e2e.cao.rig import CaoRig, cao_rig, response_prompt
from tests.support.server import running_baton_server

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


def test_session_list_agent_status_and_cancel(tmp_path: Path) -> None:
    """`cao session list`, `cao agent status` and `cancel` (a key, then a delete)."""
    require_cao()
    home = tmp_path / "cao-home"
    home.mkdir()
    with running_baton_server(tmp_path) as server, server.client() as client:
        boss = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        ).json()
        worker = client.post(
            f"/sessions/{boss['session_name']}/terminals",
            params={"agent_profile": "tester", "provider": "scripted", "caller_id": boss["id"]},
        ).json()
        cao = CaoClients(port=server.port, home=home)

        listed = cao.cli("session", "list")
        assert listed.returncode == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if boss["session_name"] in line)
        assert row.split()[1:] == [boss["id"], "idle", "2"]

        status = cao.cli("agent", "status", worker["id"], terminal_id=boss["id"])
        assert status.returncode == 0, status.stderr
        assert "status: idle\nagent_profile: tester" in status.stdout

        # The worker may not cancel its supervisor: CAO checks caller_id first.
        refused = cao.cli("agent", "cancel", boss["id"], terminal_id=worker["id"])
        assert refused.returncode != 0
        assert "may only act on itself or terminals it created" in refused.stdout + refused.stderr

        cancelled = cao.cli("agent", "cancel", worker["id"], terminal_id=boss["id"])
        assert cancelled.returncode == 0, cancelled.stderr
        assert "Sent interrupt (C-c)" in cancelled.stdout
        deleted = cao.cli("agent", "cancel", "--delete", worker["id"], terminal_id=boss["id"])
        assert deleted.returncode == 0, deleted.stderr
        assert f"Terminal {worker['id']} deleted successfully" in deleted.stdout
        assert client.get(f"/terminals/{worker['id']}").status_code == 404


def test_cao_install_then_launch_the_installed_profile(rig: CaoRig, tmp_path: Path) -> None:
    """`cao install ./file.md` puts a profile in CAO's agent store; `cao launch --agents`
    starts it under `baton serve`, in a session `cao session status` finds."""
    source = tmp_path / "store_analyst.md"
    source.write_text(
        "---\nname: store_analyst\ndescription: Installed analyst\nprovider: codex\n---\n"
        "You analyse, as installed with cao install.\n",
        encoding="utf-8",
    )
    installed = rig.cao.cli("install", str(source))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    prompt = response_prompt(rig.project, "analyst_summary.md", "Analyse the failing test.")
    launched = rig.cao.cli(
        "launch",
        "--agents",
        "store_analyst",
        "--headless",
        "--auto-approve",
        "--working-directory",
        str(rig.project),
        prompt,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    session = re.search(r"Session created: (\S+)", launched.stdout)
    assert session and session[1].startswith("cao-"), launched.stdout
    conductor = rig.client.get(f"/sessions/{session[1]}/terminals").json()[0]
    assert conductor["agent_profile"] == "store_analyst" and conductor["provider"] == "codex"
    assert rig.response_file("analyst_summary.md").read_text().startswith("ANALYST_SUMMARY")
    status = rig.cao.cli("session", "status", session[1].removeprefix("cao-"))
    assert status.returncode == 0, status.stdout + status.stderr
    assert conductor["id"] in status.stdout
