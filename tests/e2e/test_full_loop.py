"""The whole loop with real agent CLIs: `baton run` → `baton serve` → Codex / Claude Code.

The CLIs talk to scripted model servers on 127.0.0.1 (tests/e2e/model), which play each
role from the prompt: they make the CLI run real shell commands that apply the sample
project's patches, run its real unit tests and write the response files. Round 1's patch
is wrong (a real FAIL), round 2's is right (a real PASS).

While a loop runs, every terminal is polled; the statuses `baton serve` reported are then
held against the turns the model server saw: never at rest while a turn is open, never
still working more than one poll after it closed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.e2e.model.brain import Brain, Misbehaviour
from tests.e2e.team import (
    LoopResult,
    StatusRecorder,
    TeamServer,
    at_rest_during_open_turns,
    processing_after_closed_turns,
    run_loop,
    team_server,
)
from tests.support.server import wait_for_status

from baton.demo.sample import SampleProject, write_sample_project

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

POLL_INTERVAL = 0.25
# A CLI draws its working state a frame after its request leaves; a new prompt makes it
# busy a little before its first request reaches the model.
RENDER_SLACK = 0.5
# After the model's last byte a CLI draws the answer, fires its end signal (a hook runs a
# Python of its own) and the server reads it: on two cores shared by two test workers,
# each running five CLIs, that took up to ~1.7 s. The fault this check is for, a status
# stuck at processing, lasts until the agent's next turn.
END_SLACK = 2.0
NEXT_TURN_ALLOWANCE = 3.0


def _project(tmp_path: Path) -> SampleProject:
    return write_sample_project(tmp_path / "project")


def _run_recorded(
    team: TeamServer, project: SampleProject, *, end_slack: float = END_SLACK, **kwargs: object
) -> LoopResult:
    """Run the loop with every terminal polled, and hold the statuses against the model's
    turns (`end_slack`: how long after the model's last byte a CLI may still draw it)."""
    # The terminals stay up at the end (no CLEANUP_ON_EXIT), so a CLI shutting down is
    # never mistaken for one still working; the mixed-team test covers the exit keys.
    with StatusRecorder(team.server, interval=POLL_INTERVAL) as recorder:
        result = run_loop(team, project, CLEANUP_ON_EXIT="0", **kwargs)  # type: ignore[arg-type]
    seen = {(sample.role, sample.status) for sample in recorder.samples}
    for role in ("analyst", "analyst_review", "programmer", "programmer_review", "tester"):
        # Not a vacuous check: every terminal was seen both working and done.
        assert {(role, "processing"), (role, "completed")} <= seen, sorted(seen)
    timeline = team.brain.timeline
    assert not at_rest_during_open_turns(recorder.samples, timeline, render_slack=RENDER_SLACK)
    assert not processing_after_closed_turns(
        recorder.samples,
        timeline,
        poll_interval=POLL_INTERVAL + end_slack,
        next_turn_allowance=NEXT_TURN_ALLOWANCE,
    )
    return result


def _assert_fail_then_pass(result: LoopResult) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.tester_verdicts() == ["RESULT: FAIL", "RESULT: PASS"]
    state = json.loads(
        (result.project.root / ".tmp" / "codex-3agents-loop-state.json").read_text("utf-8")
    )
    assert state["final_status"] == "PASS"
    assert state["current_round"] == 2
    # The programmer's shell commands really changed the project: its tests pass now.
    check = subprocess.run(
        result.project.test_command,
        shell=True,
        cwd=result.project.root,
        capture_output=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout


def _turns_of(brain: Brain) -> dict[str, int]:
    counts: dict[str, int] = {}
    for turn in brain.timeline:
        counts[turn.role] = counts.get(turn.role, 0) + 1
    return counts


def test_codex_team_fail_then_pass(tmp_path: Path) -> None:
    brain = Brain()
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = _run_recorded(team, _project(tmp_path), provider="codex")
    _assert_fail_then_pass(result)
    # Two rounds of: analyst ⇄ peer twice, programmer ⇄ peer twice, tester once.
    assert _turns_of(brain) == {
        "analyst": 4,
        "analyst_review": 4,
        "programmer": 4,
        "programmer_review": 4,
        "tester": 2,
    }


def test_claude_code_team_fail_then_pass(tmp_path: Path) -> None:
    brain = Brain()
    with team_server(tmp_path, brain, {"claude_code"}) as team:
        result = _run_recorded(team, _project(tmp_path), provider="claude_code")
    _assert_fail_then_pass(result)
    assert _turns_of(brain)["tester"] == 2


def test_mixed_team_from_the_json_config(tmp_path: Path) -> None:
    project = _project(tmp_path)
    config = tmp_path / "loop.json"
    config.write_text(
        json.dumps(
            {
                "provider": "codex",
                "agents": {
                    "peer_analyst": {"provider": "claude_code"},
                    "programmer": {"provider": "claude_code"},
                    "tester": {"provider": "codex"},
                },
            }
        ),
        encoding="utf-8",
    )
    brain = Brain()
    with team_server(tmp_path, brain, {"codex", "claude_code"}) as team:
        with StatusRecorder(team.server, interval=POLL_INTERVAL) as recorder:
            result = run_loop(team, project, provider="", config_file=config)
        roles = {sample.terminal_id: sample.role for sample in recorder.samples}
        with team.server.client() as client:
            described = {t: client.get(f"/terminals/{t}").json() for t in roles}
            # CLEANUP_ON_EXIT=1: each CLI was asked to quit with its own exit keys, and did.
            exited = {t: wait_for_status(client, t, {"error"}) for t in roles}
    _assert_fail_then_pass(result)
    assert set(exited.values()) == {"error"}, exited
    by_role = {roles[t]: d["provider"] for t, d in described.items()}
    assert by_role == {
        "analyst": "codex",
        "analyst_review": "claude_code",
        "programmer": "claude_code",
        "programmer_review": "codex",
        "tester": "codex",
    }


def test_agent_ignoring_the_file_instruction_fails_cleanly_in_strict_mode(
    tmp_path: Path,
) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.IGNORE_FILE})
    project = _project(tmp_path)
    with team_server(tmp_path, brain, {"codex"}) as team:
        result = run_loop(team, project, provider="codex", IDLE_GRACE_SECONDS="3")
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
            _project(tmp_path),
            provider="codex",
            IDLE_GRACE_SECONDS="3",
            STRICT_FILE_HANDOFF="0",
        )
    # The tester's verdicts came from its last terminal output, not from a file.
    _assert_fail_then_pass(result)
    assert result.stderr.count("using its last terminal output") == 2


@pytest.mark.parametrize("provider", ["codex", "claude_code"])
def test_model_error_ends_the_run_naming_the_agent_and_what_its_cli_showed(
    tmp_path: Path, provider: str
) -> None:
    brain = Brain(behaviours={"analyst": Misbehaviour.HTTP_500})
    with team_server(tmp_path, brain, {provider}) as team:
        result = run_loop(team, _project(tmp_path), provider=provider)
    assert result.returncode == 1
    [error] = result.error_lines()
    assert "analyst (terminal " in error
    assert "reported status error" in error
    assert "the CLI showed:" in error
    assert "Traceback" not in result.stderr
