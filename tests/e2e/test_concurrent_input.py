"""Ten senders at once to one busy real CLI: each message reaches the model once, alone.

`POST /terminals/{id}/input` queues input to a busy CLI and answers 200 only once the CLI
started a turn for the message. The scripted model servers see what the CLI really sent:
in the conversation's last request, each marker is in exactly one user message, and
that message is exactly what was sent (nothing glued to it, nothing lost).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e.clis import require_cli
from tests.e2e.model import anthropic_messages, openai_responses
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.support.server import ServerProcess, running_baton_server, wait_for_status

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

SENDERS = 10
_WAIT_SECONDS = 240.0


def _create(client: httpx.Client, provider: str, project: Path) -> str:
    response = client.post(
        "/sessions",
        params={"provider": provider, "agent_profile": "tester", "working_directory": str(project)},
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _send_concurrently(server: ServerProcess, terminal: str) -> tuple[list[str], list[str]]:
    """The first message, then ten at once while it works; (sent, accepted in order)."""
    with server.client() as client:
        first = client.post(f"/terminals/{terminal}/input", params={"message": "First: MARK-FF"})
        assert first.status_code == 200, first.text
        # Taken: busy, or (a poll held up on a loaded machine) done already; the senders
        # below keep it busy for one another either way.
        assert wait_for_status(client, terminal, {"processing", "completed"}) != "idle"
    markers = [f"Message {index:02d}: MARK-{index:02d}" for index in range(SENDERS)]
    accepted: list[str] = []
    codes: dict[str, int] = {}
    lock = threading.Lock()

    def send(message: str) -> None:
        with httpx.Client(
            base_url=server.base_url, headers=server.headers, timeout=_WAIT_SECONDS
        ) as own:
            response = own.post(f"/terminals/{terminal}/input", params={"message": message})
        with lock:
            codes[message] = response.status_code
            if response.status_code == 200:
                accepted.append(message)

    threads = [threading.Thread(target=send, args=(message,)) for message in markers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=_WAIT_SECONDS)
    assert codes == dict.fromkeys(markers, 200)
    return ["First: MARK-FF", *markers], ["First: MARK-FF", *accepted]


def _assert_each_alone_once(user_messages: list[str], sent: list[str], order: list[str]) -> None:
    for message in sent:
        marker = message.split(": ")[1]
        holding = [text for text in user_messages if marker in text]
        assert holding == [message], (marker, holding)
    typed = [text for text in user_messages if "MARK-" in text]
    assert typed == order  # the model saw them in the order the server answered 200


def _wait_done(server: ServerProcess, terminal: str) -> None:
    with server.client() as client:
        status = wait_for_status(client, terminal, {"completed", "error"}, timeout=_WAIT_SECONDS)
        assert status == "completed"


def test_codex_takes_ten_concurrent_messages_each_as_its_own_turn(tmp_path: Path) -> None:
    require_cli("codex")
    project = tmp_path / "project"
    project.mkdir()
    brain = Brain(behaviours={"*": Misbehaviour.SLOW}, slow_seconds=1.0)
    with (
        openai_responses.openai_model_server(brain) as model,
        running_baton_server(
            tmp_path, env=openai_responses.codex_environment(tmp_path, model)
        ) as server,
        server.client() as client,
    ):
        terminal = _create(client, "codex", project)
        assert wait_for_status(client, terminal, {"idle"}) == "idle"
        sent, order = _send_concurrently(server, terminal)
        _wait_done(server, terminal)
        requests = [body for body in model.requests if body.get("tools")]
    last = max(requests, key=lambda body: len(body.get("input") or []))
    _assert_each_alone_once(_codex_user_messages(last), sent, order)


def _codex_user_messages(body: dict[str, Any]) -> list[str]:
    items = body.get("input") or []
    texts = [
        openai_responses._text_of(item)
        for item in items
        if item.get("type", "message") == "message" and item.get("role") == "user"
    ]
    return [text.strip() for text in texts if "MARK-" in text]


def test_claude_code_takes_ten_concurrent_messages_each_as_its_own_turn(tmp_path: Path) -> None:
    require_cli("claude")
    project = tmp_path / "project"
    project.mkdir()
    brain = Brain(behaviours={"*": Misbehaviour.SLOW}, slow_seconds=1.0)
    with (
        anthropic_messages.anthropic_model_server(brain) as model,
        running_baton_server(
            tmp_path, env=anthropic_messages.claude_environment(tmp_path, model)
        ) as server,
        server.client() as client,
    ):
        terminal = _create(client, "claude_code", project)
        sent, order = _send_concurrently(server, terminal)
        _wait_done(server, terminal)
        requests = model.turn_requests()
    last = max(requests, key=lambda body: len(body.get("messages") or []))
    _assert_each_alone_once(_claude_user_messages(last), sent, order)


def _claude_user_messages(body: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for message in body.get("messages") or []:
        if message.get("role") != "user":
            continue
        blocks = anthropic_messages._blocks(message.get("content"))
        typed = "\n".join(t for t in map(anthropic_messages._typed_text, blocks) if t)
        if "MARK-" in typed:
            texts.append(typed)
    return texts
