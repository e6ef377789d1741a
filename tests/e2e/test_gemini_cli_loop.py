"""The whole loop with the real Gemini CLI offline: every role and a model error.

Gemini CLI 0.61 talks to the scripted Gemini API of tests/e2e/model/gemini_api.py on
127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`), which plays each role with `run_shell_command`
calls that apply the sample project's patches, run its real tests and write the response
files. Round 1's patch is wrong (a real FAIL), round 2's right (a real PASS).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.loop_checks import plain_project, whole_loop
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.model.gemini_api import ModelServer
from tests.e2e.team import run_loop, team_server

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


def test_gemini_model_error_ends_the_run_naming_the_agent(tmp_path: Path) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.HTTP_500})
    with team_server(tmp_path, brain, {"gemini_cli"}) as team:
        result = run_loop(team, plain_project(tmp_path), provider="gemini_cli")
    assert result.returncode == 1
    [error] = result.error_lines()
    assert "analyst (terminal " in error
    assert "reported status error" in error
    assert "API Error" in error
    assert "Traceback" not in result.stderr
