"""Concurrent input to one busy terminal: each message delivered once, as its own turn."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from tests.support.server import (
    ServerProcess,
    create_scripted_terminal,
    running_baton_server,
    wait_for_status,
)

pytestmark = pytest.mark.tmux

SENDERS = 10


def _scripted(client: httpx.Client, tmp_path: Path) -> str:
    return str(create_scripted_terminal(client, tmp_path, profile="tester")["id"])


def _inputs(server: ServerProcess, terminal: str) -> list[str]:
    folder = server.state_dir / "terminals" / terminal / "inputs"
    return [path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.txt"))]


def _wait_busy(client: httpx.Client, terminal: str) -> None:
    assert wait_for_status(client, terminal, {"processing"}) == "processing"


def test_concurrent_senders_to_a_busy_terminal_each_arrive_once_alone(tmp_path: Path) -> None:
    env = {"BATON_SCRIPTED_WORK_SECONDS": "0.3"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        first = client.post(f"/terminals/{terminal}/input", params={"message": "busy first"})
        assert first.status_code == 200, first.text
        # Taken (its 0.3 s turn may be over before a poll on a loaded machine sees it
        # busy); the senders below keep the terminal busy for one another.
        assert wait_for_status(client, terminal, {"processing", "completed"}) != "idle"
        answers: dict[str, httpx.Response] = {}
        accepted: list[str] = []
        order = threading.Lock()

        def send(marker: str) -> None:
            with server.client() as own:
                response = own.post(f"/terminals/{terminal}/input", params={"message": marker})
            with order:
                answers[marker] = response
                if response.status_code == 200:
                    accepted.append(marker)

        markers = [f"message {index:02d} marker-{index:02d}" for index in range(SENDERS)]
        threads = [threading.Thread(target=send, args=(marker,)) for marker in markers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        assert {m: r.status_code for m, r in answers.items()} == dict.fromkeys(markers, 200)
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    received = _inputs(server, terminal)
    # Exactly the messages sent, each once and whole (none glued to another, none lost),
    # in the order their answers came back.
    assert received[0] == "busy first"
    assert sorted(received[1:]) == sorted(markers)
    assert received[1:] == accepted


def test_queue_false_to_a_busy_terminal_is_409_and_types_nothing(tmp_path: Path) -> None:
    env = {"BATON_SCRIPTED_WORK_SECONDS": "2"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        client.post(f"/terminals/{terminal}/input", params={"message": "long work"})
        _wait_busy(client, terminal)
        refused = client.post(
            f"/terminals/{terminal}/input", params={"message": "not now", "queue": "false"}
        )
        assert refused.status_code == 409, refused.text
        assert "busy" in refused.json()["detail"]
        assert "queue=false" in refused.json()["detail"]
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
        # At rest, queue=false delivers at once.
        taken = client.post(
            f"/terminals/{terminal}/input", params={"message": "now", "queue": "false"}
        )
        assert taken.status_code == 200, taken.text
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert _inputs(server, terminal) == ["long work", "now"]


def test_a_queued_message_times_out_with_504_and_is_never_typed(tmp_path: Path) -> None:
    env = {"BATON_SCRIPTED_WORK_SECONDS": "4", "BATON_INPUT_QUEUE_TIMEOUT": "1"}
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        terminal = _scripted(client, tmp_path)
        client.post(f"/terminals/{terminal}/input", params={"message": "long work"})
        _wait_busy(client, terminal)
        late = client.post(f"/terminals/{terminal}/input", params={"message": "too late"})
        assert late.status_code == 504, late.text
        assert "BATON_INPUT_QUEUE_TIMEOUT" in late.json()["detail"]
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert _inputs(server, terminal) == ["long work"]


def test_input_to_a_cli_asking_a_question_is_typed_at_once_as_the_answer(
    tmp_path: Path,
) -> None:
    env = {"BATON_SCRIPTED_ASK_BEFORE_WORK": "programmer", "BATON_SCRIPTED_WORK_SECONDS": "1"}
    answer_file = tmp_path / ".tmp" / "agent-responses" / "programmer_summary.md"
    task = f"Implement it. Write your answer to {answer_file}"
    with running_baton_server(tmp_path, env=env) as server, server.client() as client:
        response = client.post(
            "/sessions",
            params={
                "agent_profile": "programmer",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        terminal = response.json()["id"]
        assert client.post(f"/terminals/{terminal}/input", params={"message": task}).is_success
        asking = wait_for_status(client, terminal, {"waiting_user_answer"})
        assert asking == "waiting_user_answer"
        # Typed at once into the dialog, not queued behind it.
        answered = client.post(f"/terminals/{terminal}/input", params={"message": "yes"})
        assert answered.status_code == 200, answered.text
        assert "yes" in server.screen()
        assert wait_for_status(client, terminal, {"completed"}) == "completed"
    assert answer_file.exists()
    assert _inputs(server, terminal) == [task]  # the answer started no turn
