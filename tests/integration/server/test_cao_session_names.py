"""CAO's session-name convention under `baton serve`: new sessions are `cao-<name>`,
a bare name is the alias of its prefixed session, and CAO's own `cao` CLI finds them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.e2e.cao.clients import CAO_BIN_DIR, CaoClients, require_cao
from tests.support.server import ServerProcess, create_scripted_terminal

pytestmark = pytest.mark.tmux


def test_new_sessions_get_the_prefix_and_bare_names_are_aliases(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        bare = create_scripted_terminal(client, tmp_path, session_name=None)
        assert bare["session_name"].startswith("cao-")
        named = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
                "session_name": "team-b",
            },
        ).json()
        assert named["session_name"] == "cao-team-b"
        kept = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
                "session_name": "cao-kept",
            },
        ).json()
        assert kept["session_name"] == "cao-kept"
        assert "cao-team-b" in baton_server.tmux("list-sessions", "-F", "#{session_name}").split()
        # The bare name reaches the prefixed session on every session route.
        assert client.get("/sessions/team-b").json()["session"]["name"] == "cao-team-b"
        listed = client.get("/sessions/team-b/terminals").json()
        assert [t["id"] for t in listed] == [named["id"]]
        added = create_scripted_terminal(client, tmp_path, session_name="team-b")
        assert added["session_name"] == "cao-team-b"
        again = client.post(
            "/sessions",
            params={"agent_profile": "tester", "provider": "scripted", "session_name": "team-b"},
        )
        assert again.status_code == 400
        assert "cao-team-b" in again.json()["detail"]
        assert client.delete("/sessions/team-b").json()["deleted"] == ["cao-team-b"]
        assert client.get("/sessions/cao-team-b").status_code == 404
        assert client.get(f"/terminals/{added['id']}").status_code == 404
        assert client.get(f"/terminals/{kept['id']}").status_code == 200


def test_a_name_too_long_once_prefixed_is_400(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        refused = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
                "session_name": "a" * 64,
            },
        )
    assert refused.status_code == 400
    assert "at most 64" in refused.json()["detail"]


def test_cao_info_and_session_status_find_the_session(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    """`cao info` from inside the terminal's pane, `cao session status` by bare name."""
    require_cao()
    home = tmp_path / "cao-home"
    home.mkdir()
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, session_name=None)
        cao = CaoClients(port=baton_server.port, home=home)
        pane = baton_server.terminal_pane(terminal["id"])
        assert pane is not None
        # As from a shell in the pane: TMUX names the private server, TMUX_PANE the pane.
        inside = {"TMUX": f"{baton_server.tmux_socket},{os.getpid()},0", "TMUX_PANE": pane}
        info = subprocess.run(
            [str(CAO_BIN_DIR / "cao"), "info"],
            env={**cao.environment(terminal["id"]), **inside},
            cwd=home,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert info.returncode == 0, info.stderr
        assert f"Session ID: {terminal['session_name']}\nActive terminals: 1" in info.stdout
        bare = terminal["session_name"].removeprefix("cao-")
        status = cao.cli("session", "status", bare)
        assert status.returncode == 0, status.stdout + status.stderr
        assert terminal["id"] in status.stdout
