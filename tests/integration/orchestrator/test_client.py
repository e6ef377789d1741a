"""ApiClient against a real HTTP server on 127.0.0.1 (the scripted CAO of the tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.orchestrator.fake_cao import FakeCao

from baton.errors import ApiError, ApiHttpError, ApiUnreachableError
from baton.orchestrator.client import ApiClient


@pytest.fixture
def cao() -> Iterator[FakeCao]:
    with FakeCao() as server:
        yield server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_create_session_returns_terminal_id_and_session_name(cao: FakeCao, tmp_path: Path) -> None:
    with ApiClient(cao.url, provider="codex", working_directory=tmp_path) as api:
        created = api.create_session("system_analyst")
    assert set(created) >= {"id", "session_name"}
    request = cao.posts("/sessions")[0]
    assert request.path == "/sessions"
    assert request.query == {
        "provider": "codex",
        "agent_profile": "system_analyst",
        "working_directory": str(tmp_path),
    }


def test_create_terminal_in_a_session(cao: FakeCao, tmp_path: Path) -> None:
    with ApiClient(cao.url, provider="codex", working_directory=tmp_path) as api:
        session = api.create_session("system_analyst")["session_name"]
        created = api.create_terminal(session, "tester", provider="claude_code")
    assert created["session_name"] == session
    request = cao.posts("/terminals")[0]
    assert request.path == f"/sessions/{session}/terminals"
    assert request.query["provider"] == "claude_code"
    assert request.query["agent_profile"] == "tester"


def test_a_create_says_when_its_request_is_written(cao: FakeCao, tmp_path: Path) -> None:
    # The team's creates go out one after another by this sign (orchestrator/team.py).
    happened: list[str] = []
    with ApiClient(cao.url, provider="codex", working_directory=tmp_path) as api:
        session = api.create_session("system_analyst")["session_name"]
        api.create_terminal(session, "tester", on_sent=lambda: happened.append("written"))
        happened.append("answered")
    assert happened == ["written", "answered"]


def test_send_input_to_terminal(cao: FakeCao) -> None:
    terminal = cao.add_terminal("tester")
    cao.behaviour["tester"] = lambda turn: [("status", "processing")]
    message = "quotes ' \" $HOME `id` ünï ✓\nsecond line"
    with ApiClient(cao.url) as api:
        api.send_input(terminal.id, message)
        assert api.get_status(terminal.id) in ("idle", "processing")
    request = cao.posts("/input")[0]
    assert request.path == f"/terminals/{terminal.id}/input"
    assert request.query["message"] == message
    assert terminal.prompts == [message]


def test_long_message_goes_in_the_body(cao: FakeCao) -> None:
    terminal = cao.add_terminal("tester")
    cao.behaviour["tester"] = lambda turn: []
    message = "é" * 40_000  # too long for a URL once percent-encoded
    with ApiClient(cao.url) as api:
        api.send_input(terminal.id, message)
    assert terminal.prompts == [message]


def test_status_output_and_exit(cao: FakeCao) -> None:
    terminal = cao.add_terminal("analyst")
    terminal.status = "completed"
    terminal.last_output = "ANALYST_SUMMARY"
    with ApiClient(cao.url) as api:
        assert api.get_status(terminal.id) == "completed"
        assert api.get_last_output(terminal.id) == "ANALYST_SUMMARY"
        api.exit_terminal(terminal.id)
    assert terminal.exited
    output_request = next(r for r in cao.requests if r.path.endswith("/output"))
    assert output_request.query == {"mode": "last"}


def test_http_error_carries_status_code_and_detail(cao: FakeCao) -> None:
    with ApiClient(cao.url) as api, pytest.raises(ApiHttpError) as raised:
        api.get_status("deadbeef")
    assert raised.value.status_code == 404
    assert raised.value.detail == "terminal deadbeef not found"
    assert "HTTP 404" in str(raised.value)


def test_unreachable_server_is_one_line_naming_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with ApiClient(url, outage_seconds=0) as api, pytest.raises(ApiUnreachableError) as raised:
        api.create_session("system_analyst")
    message = str(raised.value)
    assert url in message and "baton serve" in message and "cao-server" in message
    assert "\n" not in message


def test_reads_retry_transient_connection_errors() -> None:
    port = _free_port()
    started: list[FakeCao] = []

    def start_later() -> None:
        time.sleep(0.3)
        server = FakeCao(port=port)
        server.__enter__()
        server.add_terminal("tester").status = "completed"
        started.append(server)

    thread = threading.Thread(target=start_later)
    thread.start()
    try:
        with ApiClient(f"http://127.0.0.1:{port}", outage_seconds=3.75) as api:
            assert api.get_status("00000001") == "completed"
    finally:
        thread.join()
        for server in started:
            server.stop()


class DroppingServer:
    """Accepts connections and closes them at once, counting them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.05)
        self.stopped = threading.Event()
        self.accepted = 0
        self.methods: list[bytes] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self.methods.append(connection.recv(65536).split(b" ", 1)[0])
            connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_a_write_whose_answer_is_lost_is_not_sent_blindly() -> None:
    server = DroppingServer()  # not a server that honours Idempotency-Key
    try:
        with ApiClient(server.url, outage_seconds=0.2) as api:
            with pytest.raises(ApiError):
                api.send_input("00000001", "hello")
            assert server.methods.count(b"POST") == 1  # no prompt typed twice
        reads = len(server.methods)
        with ApiClient(server.url, outage_seconds=0.2) as api:  # a new outage window
            with pytest.raises(ApiError):
                api.get_status("00000001")
            assert len(server.methods) - reads > 1  # a read is tried again
    finally:
        server.close()


def test_bearer_token_is_sent_when_set() -> None:
    with FakeCao(token="s3cret") as cao:
        with ApiClient(cao.url) as api, pytest.raises(ApiHttpError) as raised:
            api.create_session("system_analyst")
        assert raised.value.status_code == 401
        with ApiClient(cao.url, token="s3cret") as api:
            api.create_session("system_analyst")
        assert cao.requests[-1].headers.get("Authorization") == "Bearer s3cret"


def test_answer_without_id_is_an_api_error(cao: FakeCao) -> None:
    with ApiClient(cao.url) as api, pytest.raises(ApiError, match="lacks `id`"):
        api._terminal_json("GET", "/health", {})
