"""`baton run` options and START_AGENT, against the scripted CAO server."""

from __future__ import annotations

from tests.integration.orchestrator.conftest import Project, cao, project  # noqa: F401
from tests.integration.orchestrator.fake_cao import answer_plan

ROUND = [
    "analyst",
    "peer_analyst",
    "analyst",
    "peer_analyst",
    "programmer",
    "peer_programmer",
    "programmer",
    "peer_programmer",
    "tester",
]
EXPLORE = "The report lives in src/report.py; totals are missing."


def test_options_win_over_the_environment(project: Project) -> None:  # noqa: F811
    project.cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=False)
    run = project.run("--max-rounds", "1", "--no-require-review-evidence", MAX_ROUNDS="5")
    assert run.returncode == 1, run.stderr
    assert [role for role, _ in project.cao.inputs()] == ROUND
    assert "no PASS within MAX_ROUNDS=1" in run.stderr
    assert project.state()["final_status"] == "FAIL"


def test_start_agent_tester_tests_at_once(project: Project) -> None:  # noqa: F811
    run = project.run(START_AGENT="tester")
    assert run.returncode == 0, run.stderr
    inputs = project.cao.inputs()
    assert [role for role, _ in inputs] == ["tester"]
    prompt = inputs[0][1]
    assert "No programmer ran" in prompt
    assert EXPLORE in prompt
    assert "START_AGENT=tester: the run starts at the tester" in run.stderr
    assert project.state()["final_status"] == "PASS"


def test_start_agent_programmer_builds_on_the_explore_summary(project: Project) -> None:  # noqa: F811
    project.cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=turn.count > 1)
    run = project.run("--start-agent", "programmer")
    assert run.returncode == 0, run.stderr
    roles = [role for role, _ in project.cao.inputs()]
    # Round 1 from the programmer; the FAIL sends round 2 through the whole loop.
    assert roles == ROUND[4:] + ROUND
    first = project.cao.inputs()[0][1]
    assert "No analyst ran" in first
    assert first.count(EXPLORE) >= 1
