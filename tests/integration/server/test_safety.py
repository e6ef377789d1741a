"""Only loopback may drive the server: Host and Origin checks, and the optional token."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.support.server import ServerProcess, running_baton_server

pytestmark = pytest.mark.tmux


def _create_params(tmp_path: Path) -> dict[str, str]:
    return {
        "agent_profile": "programmer",
        "provider": "scripted",
        "working_directory": str(tmp_path),
    }


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "10.0.0.7:9889"])
def test_foreign_host_header_is_rejected(shared_baton_server: ServerProcess, host: str) -> None:
    with shared_baton_server.client() as client:
        response = client.get("/sessions", headers={"Host": host})
    assert response.status_code == 403
    assert "host" in response.json()["detail"]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:1234", "[::1]:9889", "LOCALHOST"])
def test_loopback_host_headers_are_accepted(shared_baton_server: ServerProcess, host: str) -> None:
    with shared_baton_server.client() as client:
        response = client.get("/sessions", headers={"Host": host})
    assert response.status_code == 200


def test_foreign_origin_cannot_create_or_type(baton_server: ServerProcess, tmp_path: Path):
    origin = {"Origin": "https://attacker.example"}
    with baton_server.client() as client:
        created = client.post("/sessions", params=_create_params(tmp_path), headers=origin)
        assert created.status_code == 403
        assert "origin" in created.json()["detail"]
        assert baton_server.pane_ids() == []
        terminal = client.post("/sessions", params=_create_params(tmp_path)).json()["id"]
        typed = client.post(
            f"/terminals/{terminal}/input", params={"message": "rm -rf ~"}, headers=origin
        )
        assert typed.status_code == 403
        null_origin = client.post(f"/terminals/{terminal}/exit", headers={"Origin": "null"})
        assert null_origin.status_code == 403
        local = client.post(
            f"/terminals/{terminal}/input",
            params={"message": "hello"},
            headers={"Origin": "http://localhost:3000"},
        )
        assert local.status_code == 200
        # Reading is not state-changing: a foreign Origin may not matter, Host still does.
        assert client.get(f"/terminals/{terminal}", headers=origin).status_code == 200
    assert not list((baton_server.state_dir / "terminals" / terminal / "inputs").glob("*rm*"))
    inputs = baton_server.state_dir / "terminals" / terminal / "inputs"
    assert [p.read_text() for p in sorted(inputs.iterdir())] == ["hello"]


def test_bearer_token_is_required_when_set(tmp_path: Path) -> None:
    token = "s3cret-token"
    with running_baton_server(tmp_path, env={"BATON_TOKEN": token}) as server:
        base = server.base_url
        assert httpx.get(f"{base}/health").status_code == 200
        missing = httpx.get(f"{base}/sessions")
        assert missing.status_code == 401
        assert "token" in missing.json()["detail"]
        wrong = httpx.get(f"{base}/sessions", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        unauthorised = httpx.post(f"{base}/sessions", params=_create_params(tmp_path))
        assert unauthorised.status_code == 401
        assert server.pane_ids() == []
        with server.client() as client:  # sends the token
            assert client.get("/sessions").status_code == 200
            created = client.post("/sessions", params=_create_params(tmp_path))
            assert created.status_code == 201


def test_with_a_token_all_interfaces_and_any_host_are_served(tmp_path: Path) -> None:
    token = "remote-token-42"
    env = {"BATON_TOKEN": token}
    with running_baton_server(tmp_path, env=env, host="0.0.0.0") as server:
        base = server.base_url
        remote = {"Host": "build-box.example.com:9889"}
        assert httpx.get(f"{base}/health", headers=remote).status_code == 200
        assert httpx.get(f"{base}/sessions", headers=remote).status_code == 401
        wrong = {**remote, "Authorization": "Bearer nope"}
        assert httpx.get(f"{base}/sessions", headers=wrong).status_code == 401
        good = {**remote, "Authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/sessions", headers=good).status_code == 200
        created = httpx.post(f"{base}/sessions", params=_create_params(tmp_path), headers=good)
        assert created.status_code == 201, created.text
        terminal = created.json()["id"]
        assert httpx.get(f"{base}/terminals/{terminal}", headers=remote).status_code == 401
