"""The whole loop with the real Gemini CLI offline, every role.

Its model error, beside every other CLI's, is in test_full_loop.py.

Gemini CLI 0.61 talks to the scripted Gemini API of tests/e2e/model/gemini_api.py on
127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`), which plays each role with `run_shell_command`
calls that apply the sample project's patches, run its real tests and write the response
files. Round 1's patch is wrong (a real FAIL), round 2's right (a real PASS).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.loop_checks import whole_loop
from tests.e2e.model.brain import Brain
from tests.e2e.model.gemini_api import ModelServer
from tests.e2e.team import team_server

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_gemini_whole_loop(tmp_path: Path) -> None:
    with team_server(tmp_path, Brain(), {"gemini_cli"}) as team:
        # Gemini 2.5 Pro's documented default price.
        run = whole_loop(tmp_path, team, "gemini_cli", per_mtok=(1.25, 0.31, 10.0))
    model: ModelServer = run.model
    usage = run.usage
    # The role profile reached the model as system instruction (the memory file).
    instructions = [json.dumps(body.get("systemInstruction")) for body in model.turn_requests()]
    assert all("RESPONSE FILE" not in text for text in instructions)
    assert any("analyst" in text.lower() for text in instructions)
    # Token usage was read from the CLI's own session files (summed against the model by
    # whole_loop); every terminal ran the model.
    assert {reading.get("model") for reading in usage} == {"gemini-2.5-pro"}
