"""The whole loop with the real OpenCode offline, every role.

Its model error, beside every other CLI's, is in test_full_loop.py.

OpenCode 1.18.33 talks to the scripted Responses API of tests/e2e/model/openai_responses.py
on 127.0.0.1 (its `openai` provider with a `baseURL`, tests/e2e/model/opencode_home.py),
which plays each role with `bash` tool calls that apply the sample project's patches,
run its real tests and write the response files. Round 1's patch is wrong (a real
FAIL), round 2's right (a real PASS).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.loop_checks import whole_loop
from tests.e2e.model.brain import Brain
from tests.e2e.model.openai_responses import ModelServer
from tests.e2e.model.opencode_home import MODEL, MODEL_COST
from tests.e2e.team import team_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def _terminal_usage(team: Any) -> list[dict[str, Any]]:
    with team.server.client() as client:
        terminals = [
            terminal
            for session in client.get("/sessions").json()
            for terminal in client.get(f"/sessions/{session['name']}/terminals").json()
        ]
        return [client.get(f"/terminals/{t['id']}/usage").json() for t in terminals]


def _cost(sent: dict[str, int]) -> float:
    """What OpenCode's config prices the scripted model's tokens at (its own formula)."""
    fresh = sent["input_tokens"] - sent["cached_input_tokens"]
    dollars = (
        fresh * MODEL_COST["input"]
        + sent["cached_input_tokens"] * MODEL_COST["cache_read"]
        + sent["output_tokens"] * MODEL_COST["output"]
    )
    return dollars / 1_000_000


# OpenCode ends a turn (its `session.idle` event, which Baton reads as `completed`)
# after it has stored the answer: a fraction of a second after the model's last byte on
# an idle machine; in a CI run on two loaded cores its plugin logged `text.finished`, the
# answer stored 1.4 s later and `session.idle` 1.7 s later, 2.3-3.4 s after the model's
# last byte. A status stuck at processing, the fault this check is for, lasts until the
# agent's next turn.
FINISHING_SECONDS = 5.0


def test_opencode_whole_loop(tmp_path: Path) -> None:
    with team_server(tmp_path, Brain(), {"opencode"}) as team:
        # Priced by OpenCode itself (Baton has no price for the model): checked below.
        run = whole_loop(tmp_path, team, "opencode", per_mtok=None, end_slack=FINISHING_SECONDS)
    model: ModelServer = run.model
    usage = run.usage
    # The role profile reached the model in the system prompt, the prompt did not.
    turns = [body for body in model.requests if body.get("tools")]
    system = [
        json.dumps([item for item in body["input"] if item.get("role") in ("system", "developer")])
        for body in turns
    ]
    assert all("RESPONSE FILE" not in text for text in system)
    assert any("Instructions from:" in text and "analyst" in text.lower() for text in system)
    # Token usage and cost were read from OpenCode's own messages: what the model sent,
    # priced by OpenCode from its config (Baton has no price for the model).
    sent = model.conversation_usage()  # whole_loop summed the terminals' records against it
    assert {reading.get("model") for reading in usage} == {MODEL}
    cost = sum(float(reading.get("cost_usd") or 0.0) for reading in usage)
    assert cost == pytest.approx(_cost(sent), rel=1e-6)
    assert sum(float(e["cost_usd"]) for e in run.tokens) == pytest.approx(cost, rel=1e-6)
