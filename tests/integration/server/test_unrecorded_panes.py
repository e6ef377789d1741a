"""A server killed between starting a CLI's window and recording its terminal: the next
server closes the pane nobody can reach, and the session's name is free again."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.server import ServerProcess, running_baton_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_baton_server(tmp_path) as server:
        yield server


def _forget(state_dir: Path, terminal_id: str, session: str) -> None:
    """What a server that died before its registry writes would have left: no rows."""
    (database,) = state_dir.glob("*.db")
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM terminals WHERE id = ?", (terminal_id,))
        db.execute("DELETE FROM sessions WHERE name = ?", (session,))


def test_a_pane_started_but_never_recorded_is_closed_by_the_next_server(
    server: ServerProcess, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    params = {"provider": "scripted", "agent_profile": "tester", "working_directory": project}
    with server.client() as client:
        kept = client.post("/sessions", params={**params, "session_name": "kept"}).json()
        lost = client.post("/sessions", params={**params, "session_name": "lost"}).json()
    lost_pane = server.terminal_pane(lost["id"])
    assert lost_pane is not None
    lost_pid = server.pane_pid(lost_pane)
    runtime = server.state_dir / "terminals" / lost["id"]
    assert runtime.is_dir()

    server.kill()
    _forget(server.state_dir, lost["id"], "lost")
    server.start()

    assert server.terminal_pane(lost["id"]) is None
    assert not Path(f"/proc/{lost_pid}").exists()
    assert not runtime.exists()
    assert "never recorded" in server.log()
    with server.client() as client:
        # The recorded terminal is untouched; the lost one's session name can be had again.
        assert client.get(f"/terminals/{kept['id']}").json()["status"] in ("idle", "completed")
        again = client.post("/sessions", params={**params, "session_name": "lost"})
        assert again.status_code == 201, again.text
    assert server.terminal_pane(kept["id"]) is not None


def test_a_session_recorded_without_its_terminal_is_forgotten(
    server: ServerProcess, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    params = {"provider": "scripted", "agent_profile": "tester", "working_directory": project}
    with server.client() as client:
        made = client.post("/sessions", params={**params, "session_name": "half"}).json()
    server.kill()
    (database,) = server.state_dir.glob("*.db")
    with sqlite3.connect(database) as db:  # the session row stays, the terminal's does not
        db.execute("DELETE FROM terminals WHERE id = ?", (made["id"],))
    server.start()
    with server.client() as client:
        listed = client.get("/sessions").json()
        names = [item.get("name") or item.get("id") for item in listed]
        assert "half" not in names
        again = client.post("/sessions", params={**params, "session_name": "half"})
        assert again.status_code == 201, again.text
