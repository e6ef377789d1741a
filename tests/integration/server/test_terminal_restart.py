"""`POST /terminals/{id}/restart`: a dead agent CLI starts again in the same terminal."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tests.support.server import ServerProcess, wait_for_status

pytestmark = pytest.mark.tmux


def test_a_killed_cli_is_restarted_in_the_same_terminal(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        terminal = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        ).json()
        tid = terminal["id"]
        old_pid = baton_server.pane_pid()
        os.kill(old_pid, signal.SIGKILL)
        assert wait_for_status(client, tid, {"error"}) == "error"
        refused = client.post(f"/terminals/{tid}/input", params={"message": "hello"})
        assert refused.status_code == 409

        restarted = client.post(f"/terminals/{tid}/restart")
        assert restarted.status_code == 200, restarted.text
        body = restarted.json()
        assert body["id"] == tid and body["resumed"] is False  # scripted: nothing to resume
        assert body["status"] in ("idle", "completed")
        assert len(baton_server.pane_ids()) == 1  # the same window, a new CLI in it
        assert baton_server.pane_pid() != old_pid

        sent = client.post(f"/terminals/{tid}/input", params={"message": "again"})
        assert sent.status_code == 200
        assert wait_for_status(client, tid, {"completed"}) == "completed"

        assert client.post("/terminals/0000dead/restart").status_code == 404
