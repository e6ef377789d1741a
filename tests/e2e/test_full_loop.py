"""The whole loop with real agent CLIs: `baton run` → `baton serve` → Codex / Claude Code.

The CLIs talk to scripted model servers on 127.0.0.1 (tests/e2e/model), which play each
role from the prompt: they make the CLI run real shell commands that apply the sample
project's patches, run its real unit tests and write the response files. Round 1's patch
is wrong (a real FAIL), round 2's is right (a real PASS). Each CLI's whole loop is held to
the checks of `tests/e2e/loop_checks.py` (statuses against the model's turns, hostile
evidence kept as text, every turn's tokens counted and priced); the other CLIs' whole
loops are in their own files, and every CLI's model error is here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.loop_checks import (
    POLL_INTERVAL,
    assert_fail_then_pass,
    plain_project,
    whole_loop,
)
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.team import StatusRecorder, run_loop, team_server
from tests.support.server import wait_for_status

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_codex_whole_loop(tmp_path: Path) -> None:
    with team_server(tmp_path, Brain(), {"codex"}) as team:
        # Codex's model keeps its documented default price.
        whole_loop(tmp_path, team, "codex", per_mtok=(1.25, 0.125, 10.0))


def test_claude_code_whole_loop(tmp_path: Path) -> None:
    price = {"input_per_mtok": 2, "cached_input_per_mtok": 0.5, "output_per_mtok": 8}
    with team_server(tmp_path, Brain(), {"claude_code"}) as team:
        run = whole_loop(
            tmp_path, team, "claude_code", per_mtok=(2, 0.5, 8), prices={"claude": price}
        )
        turn_models = {body["model"] for body in run.model.turn_requests()}
    assert {reading["model"] for reading in run.usage} <= turn_models


# Each team mixes CLIs role by role from the JSON config; between them every CLI serves in
# a mixed team, and each is asked to quit with its own exit keys at the end.
MIXED_TEAMS = {
    "codex-and-claude": {
        "analyst": "codex",
        "analyst_review": "claude_code",
        "programmer": "claude_code",
        "programmer_review": "codex",
        "tester": "codex",
    },
    "five-clis": {
        "analyst": "gemini_cli",
        "analyst_review": "claude_code",
        "programmer": "opencode",
        "programmer_review": "qwen_code",
        "tester": "copilot",
    },
}
_CONFIG_ROLES = {"analyst_review": "peer_analyst", "programmer_review": "peer_programmer"}


@pytest.mark.parametrize("team_name", list(MIXED_TEAMS))
def test_mixed_team_from_the_json_config(tmp_path: Path, team_name: str) -> None:
    by_role = MIXED_TEAMS[team_name]
    project = plain_project(tmp_path)
    config = tmp_path / "loop.json"
    agents = {_CONFIG_ROLES.get(role, role): {"provider": cli} for role, cli in by_role.items()}
    config.write_text(json.dumps({"provider": "codex", "agents": agents}), encoding="utf-8")
    brain = Brain()
    with team_server(tmp_path, brain, set(by_role.values())) as team:
        with StatusRecorder(team.server, interval=POLL_INTERVAL) as recorder:
            result = run_loop(team, project, provider="", config_file=config)
        roles = {sample.terminal_id: sample.role for sample in recorder.samples}
        with team.server.client() as client:
            described = {t: client.get(f"/terminals/{t}").json() for t in roles}
            # CLEANUP_ON_EXIT=1: each CLI was asked to quit with its own exit keys, and did.
            # Five CLIs closing at once on two loaded cores can take a while.
            exited = {t: wait_for_status(client, t, {"error"}, timeout=90) for t in roles}
    assert_fail_then_pass(result)
    assert set(exited.values()) == {"error"}, exited
    assert {roles[t]: d["provider"] for t, d in described.items()} == by_role


def test_agent_ignoring_the_file_instruction_fails_cleanly_in_strict_mode(
    tmp_path: Path,
) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.IGNORE_FILE})
    project = plain_project(tmp_path)
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = run_loop(
            team, project, provider="codex", cli_roles=("analyst",), IDLE_GRACE_SECONDS="3"
        )
    assert result.returncode == 1
    [error] = result.error_lines()
    assert "analyst" in error
    assert "analyst_summary.md" in error
    assert "STRICT_FILE_HANDOFF=1" in error
    assert "Traceback" not in result.stderr
    state = json.loads((project.root / ".tmp" / "codex-3agents-loop-state.json").read_text())
    assert state["current_phase"] == "analyst"


def test_agent_ignoring_the_file_instruction_is_recovered_without_strict_mode(
    tmp_path: Path,
) -> None:
    brain = Brain(behaviours={"tester": Misbehaviour.IGNORE_FILE})
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = run_loop(
            team,
            plain_project(tmp_path),
            provider="codex",
            IDLE_GRACE_SECONDS="3",
            STRICT_FILE_HANDOFF="0",
        )
    # The tester's verdicts came from its last terminal output, not from a file.
    assert_fail_then_pass(result)
    assert result.stderr.count("using its last terminal output") == 2


# What each CLI shows of the scripted model's HTTP error, as the run's error line quotes it.
_MODEL_ERROR_SHOWN = {
    "codex": "",
    "claude_code": "",
    "gemini_cli": "API Error",
    "qwen_code": "API Error",
    "copilot": "scripted model failure",
    "opencode": "scripted model failure",
}


@pytest.mark.parametrize("provider", list(_MODEL_ERROR_SHOWN))
def test_model_error_ends_the_run_naming_the_agent_and_what_its_cli_showed(
    tmp_path: Path, provider: str
) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.HTTP_500})
    with team_server(tmp_path, brain, {provider}) as team:
        # No restarts: the real CLI's error status and screen are under test here; a
        # restart after an error, and the budget of them, are the orchestrator's own
        # (tests/integration/orchestrator/test_orchestrator_restart.py).
        project = plain_project(tmp_path)
        result = run_loop(
            team, project, provider=provider, cli_roles=("analyst",), AGENT_RESTARTS="0"
        )
    assert result.returncode == 1
    [error] = result.error_lines()
    assert "analyst (terminal " in error
    assert "reported status error" in error
    assert "the CLI showed:" in error
    assert _MODEL_ERROR_SHOWN[provider] in error.partition("the CLI showed:")[2]
    assert "AGENT_RESTARTS=0" in error
    assert "Traceback" not in result.stderr
