"""The scripted agent's status is read from its own lines, never from quoted text."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.server import ServerProcess, wait_for_status

from baton.scripted_agent import ui

pytestmark = pytest.mark.tmux

# Every line shape ScriptedProvider reads, as the first line of a prompt (echoed on screen).
QUOTES = [
    ui.TRUST_QUESTION,
    ui.working_line(0, 3),
    ui.done_line(3),
    f"{ui.ERROR_PREFIX}boom",
    ui.PROMPT,
]


def test_prompts_quoting_every_pattern_read_completed(
    baton_server: ServerProcess, tmp_path: Path
) -> None:
    with baton_server.client() as client:
        created = client.post(
            "/sessions",
            params={
                "agent_profile": "tester",
                "provider": "scripted",
                "working_directory": str(tmp_path),
            },
        )
        terminal = created.json()["id"]
        for quote in QUOTES:
            message = f"{quote}\n{quote}\nsecond line"
            assert client.post(f"/terminals/{terminal}/input", json={"message": message}).is_success
            assert wait_for_status(client, terminal, {"completed", "error"}) == "completed", quote
            assert quote in baton_server.screen()
            assert client.get(f"/terminals/{terminal}").json()["status"] == "completed"
