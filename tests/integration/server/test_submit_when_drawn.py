"""The submit key follows a paste only once the CLI has drawn it, however slowly it draws.

The scripted agent is made slow (BATON_SCRIPTED_DRAW_DELAY): it shows a paste that long
after reading it, and drops, noting them in `early-keys.log`, keys that come meanwhile —
as a CLI still busy with a paste may take an early Enter as part of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.server import (
    ServerProcess,
    create_scripted_terminal,
    running_baton_server,
    wait_for_status,
)

from baton.scripted_agent.program import DRAW_DELAY_ENV, EARLY_KEYS_LOG

pytestmark = pytest.mark.tmux

# Longer than any fixed pause the server used to take, well within its wait for a paste.
_DRAW_DELAY = "0.8"

_MESSAGES = [
    "Review the change and report.",
    "Round: 2\nAnalyst review cycle: 1\n\tIndented line\nRESPONSE FILE INSTRUCTION: none",
    "".join(f"Context line {n}: keep it.\n" for n in range(400)) + "the end",
    "tests failed:\n\x1b[201~\x15/exit\r\n\x1b[200~ still text",
]


@pytest.fixture
def slow_server(tmp_path: Path):
    with running_baton_server(tmp_path, env={DRAW_DELAY_ENV: _DRAW_DELAY}) as server:
        yield server


def test_enter_never_comes_before_a_slow_agent_drew_the_paste(
    slow_server: ServerProcess, tmp_path: Path
) -> None:
    with slow_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, profile="tester")["id"]
        for message in _MESSAGES:
            sent = client.post(f"/terminals/{terminal}/input", json={"message": message})
            assert sent.status_code == 200, sent.text
            assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
    inputs = slow_server.state_dir / "terminals" / terminal / "inputs"
    assert not (inputs / EARLY_KEYS_LOG).exists(), (inputs / EARLY_KEYS_LOG).read_text()
    # Each paste took its buffer with it: no message text stays behind in tmux.
    assert slow_server.tmux("list-buffers") == ""
    received = sorted(path.name for path in inputs.glob("*.txt"))
    assert received == [f"{n:04d}.txt" for n in range(1, len(_MESSAGES) + 1)]


def test_a_slash_command_waits_for_the_draw_too(slow_server: ServerProcess, tmp_path: Path) -> None:
    with slow_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, profile="tester")["id"]
        sent = client.post(f"/terminals/{terminal}/input", params={"message": "/unknown-command"})
        assert sent.status_code == 200, sent.text
        sent = client.post(f"/terminals/{terminal}/input", params={"message": "after it"})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
    inputs = slow_server.state_dir / "terminals" / terminal / "inputs"
    assert not (inputs / EARLY_KEYS_LOG).exists(), (inputs / EARLY_KEYS_LOG).read_text()
    assert [path.read_text() for path in sorted(inputs.glob("*.txt"))] == ["after it"]


@pytest.mark.parametrize("lines", [1, 20_000], ids=["one-line", "multi-line"])
def test_a_one_megabyte_message_is_read_on_screen_and_arrives_whole(
    baton_server: ServerProcess, tmp_path: Path, lines: int
) -> None:
    line = "x" * (1_000_000 // lines - 1)
    message = "\n".join(f"{n:05d}{line[5:]}" for n in range(lines)) + " the end"
    assert len(message.encode("utf-8")) >= 1_000_000
    with baton_server.client() as client:
        terminal = create_scripted_terminal(client, tmp_path, profile="tester")["id"]
        sent = client.post(f"/terminals/{terminal}/input", json={"message": message})
        assert sent.status_code == 200, sent.text
        assert wait_for_status(client, terminal, {"completed", "error"}) == "completed"
    inputs = baton_server.state_dir / "terminals" / terminal / "inputs"
    assert [path.read_text() for path in sorted(inputs.glob("*.txt"))] == [message]
    # The rule read the paste on screen; the submit keys did not wait out the cap.
    assert "did not show" not in baton_server.log()
