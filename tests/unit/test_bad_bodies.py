"""Deep or huge JSON bodies are one clear 400 or 413, never a 500 or a hung worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from baton.server.app import ServerOptions, create_app

JSON = {"content-type": "application/json"}


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    options = ServerOptions(state_dir=tmp_path / "state", tmux_socket=tmp_path / "unused.sock")
    return TestClient(
        create_app(options), base_url="http://127.0.0.1:9889", raise_server_exceptions=False
    )


@pytest.mark.parametrize("depth", [2_000, 100_000])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PATCH", "/terminals/0123abcd/metadata"),
        ("POST", "/sessions?agent_profile=programmer"),
        ("POST", "/terminals/run-step"),
    ],
)
def test_deeply_nested_json_is_400_in_one_line(
    client: TestClient, depth: int, method: str, path: str
) -> None:
    body = '{"metadata": ' + "[" * depth + "]" * depth + "}"
    answer = client.request(method, path, content=body, headers=JSON)
    assert answer.status_code == 400, answer.text
    assert "\n" not in answer.json()["detail"]


def test_a_huge_body_is_413_in_one_line(client: TestClient) -> None:
    answer = client.patch(
        "/terminals/0123abcd/metadata", content=b"[" + b"1," * (20 << 20) + b"1]", headers=JSON
    )
    assert answer.status_code == 413
    assert "\n" not in answer.json()["detail"]
