"""`GET /terminals/{id}` says when a terminal last made progress; a spinner is not progress.

Real tmux and `baton serve` with the scripted agent: a turn that hangs
(BATON_SCRIPTED_HANG) keeps redrawing its working indicator, yet `quiet_seconds` grows;
Esc (the provider's interrupt key) ends the hang, and the new screen is progress again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.support.server import running_baton_server, wait_for_status

from baton.orchestrator.response_files import response_file_instruction, response_path_for

pytestmark = pytest.mark.tmux


def test_quiet_seconds_grow_while_only_the_spinner_turns(tmp_path: Path) -> None:
    hangs = tmp_path / "hangs"
    hangs.write_text("programmer\n")
    project = tmp_path / "project"
    project.mkdir()
    env = {"BATON_SCRIPTED_HANG": str(hangs)}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(project),
            },
        )
        terminal = created.json()["id"]
        described = client.get(f"/terminals/{terminal}").json()
        assert described["status"] == "idle"
        assert isinstance(described["quiet_seconds"], float)
        assert described["last_change_at"].endswith("+00:00")
        prompt = "Do it.\n" + response_file_instruction(response_path_for("programmer", project))
        client.post(f"/terminals/{terminal}/input", json={"message": prompt})
        first = server.screen()
        time.sleep(2.5)
        busy = client.get(f"/terminals/{terminal}").json()
        assert busy["status"] == "processing"
        assert server.screen() != first  # the indicator turned and counted
        assert busy["quiet_seconds"] >= 1.5  # … which is not progress
        assert hangs.read_text() == ""  # the hang was taken
        client.post(f"/terminals/{terminal}/key", params={"key": "Escape"})
        assert wait_for_status(client, terminal, {"idle"}) == "idle"
        after = client.get(f"/terminals/{terminal}").json()
        assert after["quiet_seconds"] < busy["quiet_seconds"]
        assert after["last_change_at"] > busy["last_change_at"]
        assert "■ Interrupted" in server.screen()
