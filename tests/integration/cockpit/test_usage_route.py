"""`GET /terminals/{id}/usage` on a real `baton serve` with the scripted agent."""

from __future__ import annotations

import pytest
from tests.support.server import ServerProcess, wait_for_status

from baton.scripted_agent.usage import estimate_tokens

pytestmark = pytest.mark.tmux


def test_usage_route_reports_the_agents_own_counts(baton_server: ServerProcess) -> None:
    with baton_server.client() as client:
        terminal = client.post(
            "/sessions", params={"provider": "scripted", "agent_profile": "programmer"}
        ).json()
        terminal_id = terminal["id"]
        before = client.get(f"/terminals/{terminal_id}/usage")
        assert before.status_code == 200
        assert before.json() == {
            "input_tokens": None,
            "cached_input_tokens": None,
            "output_tokens": None,
            "model": None,
            "cost_usd": None,
            "complete": None,
        }
        message = "Say hello in one line."
        client.post(f"/terminals/{terminal_id}/input", params={"message": message})
        assert wait_for_status(client, terminal_id, {"completed"}) == "completed"
        usage = client.get(f"/terminals/{terminal_id}/usage").json()
        assert usage["input_tokens"] == estimate_tokens(message)
        assert usage["output_tokens"] > 0
        assert usage["cached_input_tokens"] == 0
        assert usage["model"] == "scripted"
        assert usage["cost_usd"] is None  # the scripted agent prices nothing itself
        assert usage["complete"] is True  # its file is rewritten whole after each turn
        assert client.get("/terminals/0000000a/usage").status_code == 404
