"""Text is data, never keys: hostile bytes arrive as one message; blank, huge ones refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.support.server import (
    ServerProcess,
    raw_exchange,
    running_baton_server,
    wait_for_status,
)

pytestmark = pytest.mark.tmux

# Ends a bracketed paste, clears the input line, types /exit and presses Enter.
HOSTILE = "tests failed:\n\x1b[201~\x15/exit\r\n\x1b[200~still text\x04\x03\x9b201~ end"
NEUTRALISED = "tests failed:\n␛[201~␕/exit\n␛[200~still text␄␃␛[201~ end"


def _scripted(client: httpx.Client, tmp_path: Path) -> str:
    response = client.post(
        "/sessions",
        params={
            "agent_profile": "tester",
            "provider": "scripted",
            "working_directory": str(tmp_path),
        },
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _inputs(server: ServerProcess, terminal: str) -> list[str]:
    folder = server.state_dir / "terminals" / terminal / "inputs"
    if not folder.is_dir():
        return []
    return [path.read_text(encoding="utf-8") for path in sorted(folder.iterdir())]


@pytest.mark.parametrize("as_json", [False, True], ids=["query", "json-body"])
def test_hostile_bytes_arrive_as_one_message_and_the_cli_stays_up(
    baton_server: ServerProcess, tmp_path: Path, as_json: bool
) -> None:
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)
        if as_json:
            sent = client.post(f"/terminals/{terminal}/input", json={"message": HOSTILE})
        else:
            sent = client.post(f"/terminals/{terminal}/input", params={"message": HOSTILE})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
        assert _inputs(baton_server, terminal) == [NEUTRALISED]
        # Still the same live CLI: the next message is a second, ordinary turn.
        assert client.post(f"/terminals/{terminal}/input", params={"message": "next"}).is_success
        assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
    assert _inputs(baton_server, terminal) == [NEUTRALISED, "next"]
    assert baton_server.tmux("list-panes", "-a", "-F", "#{pane_dead}").split() == ["0"]


@pytest.mark.parametrize("message", ["", "   ", "\n\t\n"])
def test_blank_message_is_422_and_nothing_is_typed(
    baton_server: ServerProcess, tmp_path: Path, message: str
) -> None:
    with baton_server.client() as client:
        terminal = _scripted(client, tmp_path)
        before = baton_server.screen()
        refused = client.post(f"/terminals/{terminal}/input", json={"message": message})
        assert refused.status_code == 422
        assert "empty" in refused.json()["detail"]
        assert client.get(f"/terminals/{terminal}").json()["status"] == "idle"
    assert baton_server.screen() == before
    assert _inputs(baton_server, terminal) == []


def test_message_over_the_limit_is_413(tmp_path: Path) -> None:
    env = {"BATON_MAX_MESSAGE_BYTES": "1000"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        too_big = client.post(f"/terminals/{terminal}/input", json={"message": "é" * 501})
        assert too_big.status_code == 413
        assert "1002 bytes" in too_big.json()["detail"]
        assert "1000" in too_big.json()["detail"]
        at_limit = client.post(f"/terminals/{terminal}/input", json={"message": "é" * 500})
        assert at_limit.status_code == 200, at_limit.text
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert _inputs(server, terminal) == ["é" * 500]


def test_a_body_too_large_for_any_message_is_413_before_it_is_read(tmp_path: Path) -> None:
    env = {"BATON_MAX_MESSAGE_BYTES": "1000"}  # bodies up to 6 * 1000 + 64 KiB
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        url = f"/terminals/{terminal}/input"
        declared = client.post(url, content=b"x" * 80_000)
        assert declared.status_code == 413
        assert "request body" in declared.json()["detail"]

        def chunks():  # no Content-Length: sent chunked
            for _ in range(80):
                yield b"y" * 1000

        chunked = client.post(url, content=chunks())
        assert chunked.status_code == 413
        # A body far beyond what the server buffers, read only once the server has
        # answered and closed: a body left unread would have reset the connection (the
        # send fails, or the answer is lost).
        size = 2_000_000
        head = f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {size}\r\n"
        whole = f"{head}\r\n".encode() + b"w" * size
        late = raw_exchange(server.port, whole, read_after=0.5)
        assert late.startswith(b"HTTP/1.1 413 "), late
        # A client waiting to be told to continue is not: it is refused at once.
        expecting = f"{head}Expect: 100-continue\r\n\r\n".encode()
        waiting = raw_exchange(server.port, expecting)
        assert waiting.startswith(b"HTTP/1.1 413 "), waiting
        small = client.post(url, content=(b"z" * 10 for _ in range(3)))
        assert small.status_code == 200, small.text
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert _inputs(server, terminal) == ["z" * 30]


def test_initial_message_goes_through_the_same_delivery(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    params = {"agent_profile": "tester", "provider": "scripted", "working_directory": str(tmp_path)}
    with baton_server.client() as client:
        blank = client.post("/sessions", params=params, json={"initial_message": "  \n"})
        assert blank.status_code == 422
        assert baton_server.pane_ids() == []  # refused before anything was created
        created = client.post("/sessions", params=params, json={"initial_message": HOSTILE})
        assert created.status_code == 201, created.text
        terminal = created.json()
        assert terminal["initial_delivery"] == {"state": "delivered"}
        assert wait_for_status(client, terminal["id"], {"completed", "error"}) == "completed"
    assert _inputs(baton_server, terminal["id"]) == [NEUTRALISED]
