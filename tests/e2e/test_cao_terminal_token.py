"""CAO 2.5.4's MCP tools inside an agent, against `baton serve` with a master token.

The tools get only what the pane holds: CAO_TERMINAL_ID and the terminal's own token as
CAO_AUTH_LOCAL_TOKEN (read from the pane process's environment). They act for their
own terminal, and the server refuses them anything beyond it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.e2e.cao.clients import CaoClients, require_cao
from tests.support.server import ServerProcess, running_baton_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

MASTER = "master-" + secrets.token_hex(16)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    require_cao()
    with running_baton_server(tmp_path, env={"BATON_TOKEN": MASTER}) as running:
        yield running


def _create(client: httpx.Client, directory: Path, **params: str) -> dict:
    session = params.pop("session_name", None)
    response = client.post(
        f"/sessions/{session}/terminals" if session else "/sessions",
        params={
            "agent_profile": "system_analyst",
            "provider": "scripted",
            "working_directory": str(directory),
            **params,
        },
    )
    assert response.status_code == 201, response.text
    return response.json()


def _pane_token(server: ServerProcess, terminal: dict) -> str:
    for line in server.tmux("list-panes", "-a", "-F", "#{window_name} #{pane_pid}").splitlines():
        name, _, pid = line.partition(" ")
        if name == terminal["name"]:
            raw = Path(f"/proc/{pid}/environ").read_bytes()
            variables = dict(item.decode().partition("=")[::2] for item in raw.split(b"\0") if item)
            assert MASTER not in variables.values()
            return variables["CAO_AUTH_LOCAL_TOKEN"]
    raise AssertionError(f"no pane for {terminal['name']}")


def test_a_worker_reports_to_its_supervisor_with_its_own_token_only(
    server: ServerProcess, tmp_path: Path
) -> None:
    with server.client() as master:
        boss = _create(master, tmp_path)
        worker = _create(master, tmp_path, session_name=boss["session_name"], caller_id=boss["id"])
        stranger = _create(master, tmp_path)
        token = _pane_token(server, worker)
        cao = CaoClients(
            port=server.port,
            home=tmp_path / "cao-home",
            extra_env=(("CAO_AUTH_LOCAL_TOKEN", token),),
        )
        cao.home.mkdir()
        sent = cao.tool(
            "send_message", {"message": "Round: 1\nAnalysis done."}, terminal_id=worker["id"]
        )
        assert sent["success"] is True, sent
        assert sent["receiver_id"] == boss["id"]
        messages = master.get(f"/terminals/{boss['id']}/inbox/messages").json()
        assert [m["sender_id"] for m in messages] == [worker["id"]]

        refused = cao.tool(
            "send_message",
            {"message": "rm -rf ~", "receiver_id": stranger["id"]},
            terminal_id=worker["id"],
        )
        assert refused["success"] is False, refused
        assert master.get(f"/terminals/{stranger['id']}/inbox/messages").json() == []


def test_handoff_runs_a_worker_with_the_supervisors_own_token(
    server: ServerProcess, tmp_path: Path
) -> None:
    with server.client() as master:
        boss = _create(master, tmp_path)
        cao = CaoClients(
            port=server.port,
            home=tmp_path / "cao-home",
            extra_env=(("CAO_AUTH_LOCAL_TOKEN", _pane_token(server, boss)),),
        )
        cao.home.mkdir()
        response = tmp_path / ".tmp" / "agent-responses" / "analyst_summary.md"
        result = cao.tool(
            "handoff",
            {
                "agent_profile": "system_analyst",
                "message": f"Round: 4\nWrite your answer to {response}",
                "timeout": 120,
            },
            terminal_id=boss["id"],
        )
        assert result["success"] is True, result
        assert response.read_text().startswith("ANALYST_SUMMARY\nRound: 4")
