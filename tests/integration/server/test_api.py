"""Every route of the CAO-compatible API and its error codes, against a real server."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, running_baton_server, wait_for_status

pytestmark = pytest.mark.tmux


def _create(client: httpx.Client, tmp_path: Path, **params: str) -> httpx.Response:
    query = {
        "agent_profile": "programmer",
        "provider": "scripted",
        "working_directory": str(tmp_path),
        **params,
    }
    return client.post("/sessions", params=query)


def test_health(shared_baton_server: ServerProcess) -> None:
    with shared_baton_server.client() as client:
        response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_create_session_returns_the_terminal(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        response = _create(client, tmp_path, session_name="team-a")
    assert response.status_code == 201
    terminal = response.json()
    assert re.fullmatch(r"[0-9a-f]{8}", terminal["id"])
    assert terminal["session_name"] == "cao-team-a"
    assert terminal["provider"] == "scripted"
    assert terminal["agent_profile"] == "programmer"
    assert terminal["status"] == "idle"
    assert terminal["name"]
    # One tmux session per API session, one window per terminal, in the working directory.
    assert baton_server.tmux("list-sessions", "-F", "#{session_name}").split() == ["cao-team-a"]
    cwd = baton_server.tmux("display-message", "-p", "-t", "=cao-team-a:", "#{pane_current_path}")
    assert Path(cwd.strip()).resolve() == tmp_path.resolve()
    # The raw pane output, escape sequences included, goes to the terminal's pane.log.
    pane_log = baton_server.state_dir / "terminals" / terminal["id"] / "pane.log"
    raw = pane_log.read_bytes()
    assert b"\x1b[?2004h" in raw
    assert "Baton scripted agent · profile programmer".encode() in raw
    size = baton_server.tmux(
        "display-message", "-p", "-t", "=cao-team-a:", "#{window_width}x#{window_height}"
    )
    assert size.strip() == "200x50"


def test_generated_session_names_are_unique(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        first = _create(client, tmp_path).json()["session_name"]
        second = _create(client, tmp_path).json()["session_name"]
    assert first != second


def test_terminals_in_a_session_and_session_views(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        first = _create(client, tmp_path, agent_profile="system_analyst").json()
        session = first["session_name"]
        added = client.post(
            f"/sessions/{session}/terminals",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        assert added.status_code == 201
        second = added.json()
        assert second["session_name"] == session
        assert second["agent_profile"] == "tester"
        assert second["id"] != first["id"]

        listed = client.get("/sessions").json()
        assert [s["name"] for s in listed] == [session]
        assert listed[0]["id"] == session
        assert listed[0]["status"] in ("active", "detached")

        detail = client.get(f"/sessions/{session}").json()
        assert detail["session"]["name"] == session
        assert {t["id"] for t in detail["terminals"]} == {first["id"], second["id"]}
        assert all(t["status"] == "idle" for t in detail["terminals"])

        in_session = client.get(f"/sessions/{session}/terminals").json()
        assert [t["id"] for t in in_session] == [first["id"], second["id"]]

        windows = baton_server.tmux("list-windows", "-t", f"={session}", "-F", "#{window_id}")
        assert len(windows.split()) == 2


def test_get_terminal_shape(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        created = _create(client, tmp_path).json()
        fetched = client.get(f"/terminals/{created['id']}").json()
    for key in ("id", "name", "provider", "session_name", "agent_profile", "status"):
        assert fetched[key] == created[key]


def test_output_full_and_last(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path).json()["id"]
        client.post(f"/terminals/{terminal}/input", params={"message": "say hello"})
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        full = client.get(f"/terminals/{terminal}/output", params={"mode": "full"}).json()
        last = client.get(f"/terminals/{terminal}/output", params={"mode": "last"}).json()
        default = client.get(f"/terminals/{terminal}/output").json()
    assert full["mode"] == "full"
    assert "Baton scripted agent" in full["output"]
    assert "› say hello" in full["output"]
    assert last["mode"] == "last"
    assert last["output"].startswith("Received 1 line(s), 9 character(s)")
    # The last answer, without screen furniture (prompt, indicator, done line).
    assert "›" not in last["output"]
    assert "Worked for" not in last["output"]
    assert default["mode"] == "full"


def test_delete_terminal_and_session(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        first = _create(client, tmp_path).json()
        session = first["session_name"]
        second = client.post(
            f"/sessions/{session}/terminals",
            params={"agent_profile": "tester", "provider": "scripted"},
        ).json()
        assert client.delete(f"/terminals/{first['id']}").json() == {"success": True}
        assert client.get(f"/terminals/{first['id']}").status_code == 404
        assert client.get(f"/terminals/{second['id']}").status_code == 200
        assert client.delete(f"/sessions/{session}").json()["success"] is True
        assert client.get(f"/sessions/{session}").status_code == 404
        assert client.get(f"/terminals/{second['id']}").status_code == 404
        assert client.get("/sessions").json() == []
    assert baton_server.tmux("list-sessions", "-F", "#{session_name}").split() == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/terminals/0123abcd"),
        ("POST", "/terminals/0123abcd/input?message=hi"),
        ("GET", "/terminals/0123abcd/output?mode=last"),
        ("POST", "/terminals/0123abcd/exit"),
        ("DELETE", "/terminals/0123abcd"),
        ("GET", "/sessions/nope"),
        ("GET", "/sessions/nope/terminals"),
        ("POST", "/sessions/nope/terminals?agent_profile=tester&provider=scripted"),
    ],
)
def test_unknown_ids_and_sessions_are_404(
    shared_baton_server: ServerProcess, method: str, path: str
) -> None:
    with shared_baton_server.client() as client:
        response = client.request(method, path)
    assert response.status_code == 404
    assert isinstance(response.json()["detail"], str)


@pytest.mark.parametrize("bad_id", ["0123ABCD", "0123abc", "0123abcde", "zzzzzzzz"])
def test_malformed_terminal_ids_are_422(shared_baton_server: ServerProcess, bad_id: str) -> None:
    with shared_baton_server.client() as client:
        response = client.get(f"/terminals/{bad_id}")
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], str)


def test_bad_output_mode_is_422(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        terminal = _create(client, tmp_path).json()["id"]
        response = client.get(f"/terminals/{terminal}/output", params={"mode": "middle"})
    assert response.status_code == 422


def test_unknown_profile_and_provider_are_400_and_start_nothing(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        profile = _create(client, tmp_path, agent_profile="astronaut")
        provider = _create(client, tmp_path, provider="teleprinter")
        missing = client.post("/sessions", params={"provider": "scripted"})
        bad_dir = _create(client, tmp_path, working_directory=str(tmp_path / "absent"))
    assert profile.status_code == 400
    assert "astronaut" in profile.json()["detail"]
    assert provider.status_code == 400
    assert "teleprinter" in provider.json()["detail"]
    assert missing.status_code == 422
    assert "agent_profile" in missing.json()["detail"]
    assert bad_dir.status_code == 400
    assert baton_server.tmux("list-sessions", "-F", "#{session_name}").split() == []


def test_provider_whose_cli_is_not_installed_is_400_and_starts_nothing(tmp_path: Path) -> None:
    # The pane's PATH is the server's: neither `codex` nor `claude` lives in /usr/bin here.
    with (
        running_baton_server(tmp_path, env={"PATH": "/usr/bin:/bin"}) as server,
        server.client() as client,
    ):
        answers = {
            name: _create(client, tmp_path, provider=name) for name in ("codex", "claude_code")
        }
        sessions = client.get("/sessions").json()
        tmux_sessions = server.tmux("list-sessions", "-F", "#{session_name}").split()
    assert answers["codex"].status_code == 400
    assert answers["codex"].json()["detail"] == (
        "provider 'codex' needs 'codex', which is not on the PATH of baton serve"
    )
    assert answers["claude_code"].status_code == 400
    assert "'claude'" in answers["claude_code"].json()["detail"]
    assert sessions == []
    assert tmux_sessions == []


def test_duplicate_session_name_is_400(baton_server: ServerProcess, tmp_path: Path) -> None:
    with baton_server.client() as client:
        assert _create(client, tmp_path, session_name="dup").status_code == 201
        again = _create(client, tmp_path, session_name="dup")
    assert again.status_code == 400
    assert "dup" in again.json()["detail"]


def test_profile_provider_is_used_when_none_is_given(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "helper.md").write_text(
        "---\nname: helper\ndescription: a test role\nprovider: scripted\n---\nBe helpful.\n"
    )
    with running_baton_server(tmp_path, profiles_dir=profiles) as server, server.client() as c:
        created = c.post(
            "/sessions", params={"agent_profile": "helper", "working_directory": str(tmp_path)}
        )
        assert created.status_code == 201, created.text
        terminal = created.json()
        assert terminal["provider"] == "scripted"
        instructions = server.state_dir / "terminals" / terminal["id"] / "instructions.md"
        assert instructions.read_text() == "Be helpful.\n"


def test_create_body_carries_env_vars_and_an_initial_message(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        response = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
            json={"env_vars": {"TEAM_COLOUR": "blue"}, "initial_message": "first task"},
        )
        assert response.status_code == 201, response.text
        terminal = response.json()
        assert terminal["initial_delivery"] == {"state": "delivered"}
        assert wait_for_status(client, terminal["id"], {"completed"}) == "completed"
        assert client.get(f"/terminals/{terminal['id']}").json()["initial_delivery"] == {
            "state": "delivered"
        }
    inputs = baton_server.state_dir / "terminals" / terminal["id"] / "inputs"
    assert (inputs / "0001.txt").read_text() == "first task"
    environ = Path(f"/proc/{baton_server.pane_pid()}/environ").read_bytes().split(b"\0")
    assert b"TEAM_COLOUR=blue" in environ
