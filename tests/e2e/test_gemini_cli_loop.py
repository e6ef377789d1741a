"""The whole loop with the real Gemini CLI offline: every role, a mixed team, a model error.

Gemini CLI 0.61 talks to the scripted Gemini API of tests/e2e/model/gemini_api.py on
127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`), which plays each role with `run_shell_command`
calls that apply the sample project's patches, run its real tests and write the response
files. Round 1's patch is wrong (a real FAIL), round 2's right (a real PASS).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.loop_checks import assert_fail_then_pass, plain_project, whole_loop
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.model.gemini_api import ModelServer
from tests.e2e.team import StatusRecorder, run_loop, team_server

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


def test_mixed_team_with_a_gemini_analyst_from_the_json_config(tmp_path: Path) -> None:
    project = plain_project(tmp_path)
    config = tmp_path / "loop.json"
    config.write_text(
        json.dumps(
            {
                "provider": "codex",
                "agents": {
                    "analyst": {"provider": "gemini_cli"},
                    "programmer": {"provider": "claude_code"},
                },
            }
        ),
        encoding="utf-8",
    )
    brain = Brain()
    with team_server(tmp_path, brain, {"codex", "claude_code", "gemini_cli"}) as team:
        with StatusRecorder(team.server, interval=0.25) as recorder:
            result = run_loop(team, project, provider="", config_file=config)
        roles = {sample.terminal_id: sample.role for sample in recorder.samples}
        with team.server.client() as client:
            described = {t: client.get(f"/terminals/{t}").json() for t in roles}
    assert_fail_then_pass(result)
    by_role = {roles[t]: d["provider"] for t, d in described.items()}
    assert by_role == {
        "analyst": "gemini_cli",
        "analyst_review": "codex",
        "programmer": "claude_code",
        "programmer_review": "codex",
        "tester": "codex",
    }


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
