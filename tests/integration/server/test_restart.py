"""A restarted server still serves the terminals its predecessor started."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.server import ServerProcess, wait_for_status

pytestmark = pytest.mark.tmux


def test_restart_keeps_terminals_usable(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        ).json()
        client.post(f"/terminals/{terminal['id']}/input", params={"message": "before"})
        assert wait_for_status(client, terminal["id"], {"completed"}) == "completed"
    pane_pid = baton_server.pane_pid()

    baton_server.restart()

    assert baton_server.pane_pid() == pane_pid  # the same CLI process lives on
    with baton_server.client() as client:
        again = client.get(f"/terminals/{terminal['id']}")
        assert again.status_code == 200
        assert again.json()["status"] == "completed"
        assert [s["name"] for s in client.get("/sessions").json()] == [terminal["session_name"]]
        sent = client.post(f"/terminals/{terminal['id']}/input", params={"message": "after"})
        assert sent.status_code == 200
        assert wait_for_status(client, terminal["id"], {"completed"}) == "completed"
        last = client.get(f"/terminals/{terminal['id']}/output", params={"mode": "last"})
        assert last.json()["output"].startswith("Received 1 line(s), 5 character(s)")
        added = client.post(
            f"/sessions/{terminal['session_name']}/terminals",
            params={"agent_profile": "tester", "provider": "scripted"},
        )
        assert added.status_code == 201
        assert client.delete(f"/sessions/{terminal['session_name']}").status_code == 200
    assert baton_server.pane_ids() == []
