"""Host and Origin checks and the bearer token, through the ASGI app in process."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from baton.errors import ConfigError
from baton.server.app import ServerOptions, create_app
from baton.server.security import is_loopback_host, require_token_for_remote, split_host


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("localhost:9889", "localhost"),
        ("[::1]:80", "::1"),
        ("127.0.0.1", "127.0.0.1"),
        ("EXAMPLE.com", "example.com"),
        ("::1", "::1"),
    ],
)
def test_split_host(header: str, host: str) -> None:
    assert split_host(header) == host


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("app.localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("localhost.", True),
        ("127.0.0.1.nip.io", False),
        ("10.0.0.1", False),
        ("example.com", False),
        ("", False),
        ("0.0.0.0", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def _client(tmp_path: Path, token: str | None = None) -> TestClient:
    options = ServerOptions(
        state_dir=tmp_path / "state", tmux_socket=tmp_path / "unused.sock", token=token
    )
    return TestClient(create_app(options), base_url="http://127.0.0.1:9889")


def test_checks_apply_before_any_route(tmp_path: Path) -> None:
    client = _client(tmp_path)
    assert client.get("/health").status_code == 200
    assert client.get("/health", headers={"host": "rebind.example"}).status_code == 403
    refused = client.delete("/terminals/0123abcd", headers={"origin": "https://evil.example"})
    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "origin 'https://evil.example' is not allowed (loopback only)"
    }
    allowed = client.delete("/terminals/0123abcd", headers={"origin": "http://127.0.0.1:5173"})
    assert allowed.status_code == 404


def test_token(tmp_path: Path) -> None:
    client = _client(tmp_path, token="t0k")
    assert client.get("/health").status_code == 200
    denied = client.get("/terminals/0123abcd")
    assert denied.status_code == 401
    assert denied.headers["www-authenticate"] == "Bearer"
    assert (
        client.get("/terminals/0123abcd", headers={"authorization": "Bearer t0k"}).status_code
        == 404
    )
    assert (
        client.get("/terminals/0123abcd", headers={"authorization": "Basic t0k"}).status_code == 401
    )


def test_unexpected_errors_are_one_json_line(tmp_path: Path) -> None:
    app = create_app(
        ServerOptions(state_dir=tmp_path / "state", tmux_socket=tmp_path / "unused.sock")
    )

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("kaput")

    client = TestClient(app, base_url="http://127.0.0.1:9889", raise_server_exceptions=False)
    response = client.get("/boom")
    assert response.status_code == 500
    assert response.json() == {"detail": "internal error: RuntimeError: kaput"}


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"])
def test_loopback_binds_need_no_token(host: str) -> None:
    require_token_for_remote(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.168.1.20", "build-box.example"])
def test_binding_beyond_loopback_needs_a_token(host: str) -> None:
    with pytest.raises(ConfigError, match="without a token: set BATON_TOKEN"):
        require_token_for_remote(host, None)
    require_token_for_remote(host, "t0k")


def test_with_a_token_the_token_is_the_guard(tmp_path: Path) -> None:
    client = _client(tmp_path, token="t0k")
    remote = {"host": "build-box.example:9889", "origin": "https://ui.example"}
    assert client.get("/health", headers=remote).status_code == 200
    assert client.delete("/terminals/0123abcd", headers=remote).status_code == 401
    authorised = {**remote, "authorization": "Bearer t0k"}
    assert client.delete("/terminals/0123abcd", headers=authorised).status_code == 404


def test_answer_actions_carry_their_own_credential(tmp_path: Path) -> None:
    """An action's one-time token is its credential: no bearer, any Host or Origin reaches
    the route (which refuses a wrong token); minting stays behind the usual checks."""
    client = _client(tmp_path, token="secret")
    foreign = {"host": "phone-tunnel.example", "origin": "https://ntfy.example"}
    used = client.post("/baton/actions/bta.not-a-real-token", headers=foreign)
    assert used.status_code == 404
    assert used.json()["detail"].startswith("no such action")
    body = {"terminal_id": "0123abcd", "choices": [{"label": "Yes", "keys": ["y"]}]}
    assert client.post("/baton/actions", json=body).status_code == 401
    assert client.post("/baton/actions/", json=body).status_code == 401
    local = _client(tmp_path / "local")
    assert local.post("/baton/actions", json=body, headers=foreign).status_code == 403
    assert local.post("/baton/actions/bta.x-wrong-token", headers=foreign).status_code == 404
