"""A first end-to-end check: a scripted session answers a prompt through the API."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.server import ServerProcess


def test_scripted_session_answers_and_writes_its_response_file(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    response = tmp_path / ".tmp" / "agent-responses" / "analyst_summary.md"
    with baton_server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "system_analyst",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        assert created.status_code == 201, created.text
        terminal = created.json()
        assert terminal["status"] == "idle"
        sent = client.post(
            f"/terminals/{terminal['id']}/input",
            params={"message": f"Round: 2\nWrite your answer to {response}"},
        )
        assert sent.json() == {"success": True}
        status = ""
        for _ in range(100):
            status = client.get(f"/terminals/{terminal['id']}").json()["status"]
            if status == "completed":
                break
            time.sleep(0.1)
        assert status == "completed"
        assert response.read_text().startswith("ANALYST_SUMMARY\nRound: 2")
        last = client.get(f"/terminals/{terminal['id']}/output", params={"mode": "last"})
        assert last.json()["output"].splitlines()[:2] == ["ANALYST_SUMMARY", "Round: 2"]
