"""An agent CLI that dies mid-turn is brought back and asked again; the loop reaches PASS."""

from __future__ import annotations

import signal

import pytest
from tests.integration.orchestrator.conftest import Project
from tests.integration.orchestrator.fake_cao import Turn, answer_plan

from baton.orchestrator.events import read_events


def _programmer_dies_on_its_first_turn(turn: Turn) -> list:
    if not _died:
        _died.append(turn.terminal.id)
        return [("status", "processing"), ("sleep", 0.2), ("die", None)]
    return answer_plan(turn)


_died: list[str] = []  # the one terminal that died


def _restart_events(project: Project) -> list[dict]:
    events = project.wd / ".tmp"
    found = []
    for log in events.glob("*/events.jsonl"):
        found += [e for e in read_events(log) if e["event"] == "agent_restart"]
    return found


def test_dead_agent_is_replaced_on_a_server_without_restart(project: Project) -> None:
    _died.clear()
    project.cao.behaviour["programmer"] = _programmer_dies_on_its_first_turn
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    state = project.state()
    assert state["final_status"] == "PASS"
    assert state["restarts"] == {"programmer": 1}
    (first,) = _died
    assert state["terminals"]["programmer"] != first
    assert first in project.cao.deleted  # the dead one is not left behind
    died = [line for line in run.stderr.splitlines() if "died" in line]
    assert len(died) == 1 and "replaced it with terminal" in died[0] and "1/2" in died[0]
    replacement = project.cao.terminals[state["terminals"]["programmer"]]
    assert "Programmer review cycle: 1" in replacement.prompts[0]  # the pending prompt again
    assert "ORIGINAL EXPLORE SUMMARY" in replacement.prompts[0]  # a fresh CLI gets it all
    (event,) = _restart_events(project)
    assert event["role"] == "programmer" and event["how"] == "replaced"


def test_dead_agent_is_restarted_in_place_where_the_server_can(project: Project) -> None:
    _died.clear()
    project.cao.can_restart = True
    project.cao.behaviour["programmer"] = _programmer_dies_on_its_first_turn
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    state = project.state()
    programmer = project.cao.terminal("programmer")
    assert project.cao.restarted == [programmer.id]
    assert state["terminals"]["programmer"] == programmer.id
    assert len(programmer.prompts) == 3  # cycle 1 twice (died, then again), cycle 2
    assert "Programmer review cycle: 1" in programmer.prompts[1]
    assert "Programmer review cycle: 2" in programmer.prompts[2]
    (event,) = _restart_events(project)
    assert event["how"] == "restarted"


def test_an_agent_that_keeps_dying_stops_the_run_resumably(project: Project) -> None:
    project.cao.can_restart = True
    project.cao.behaviour["tester"] = lambda turn: [("status", "processing"), ("die", None)]
    run = project.run(MAX_ROUNDS="1", AGENT_RESTARTS="1")
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("baton: error:")]
    assert len(errors) == 1 and "AGENT_RESTARTS=1" in errors[0], run.stderr
    assert project.state()["final_status"] == "RUNNING"
    assert "; resume with: cd " in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("can_restart", [False, True])
def test_killed_right_after_bringing_an_agent_back(project: Project, can_restart: bool) -> None:
    """SIGKILL between the restart and the state save: the resumed run leaves no orphan."""
    _died.clear()
    project.cao.can_restart = can_restart
    project.cao.behaviour["programmer"] = _programmer_dies_on_its_first_turn
    killed = project.run(MAX_ROUNDS="1", BATON_TEST_CRASH_AT="agent_restarted:1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = project.run(MAX_ROUNDS="1")
    assert resumed.returncode == 0, resumed.stderr
    state = project.state()
    assert state["final_status"] == "PASS"
    assert {t.id for t in project.cao.live_terminals()} == set(state["terminals"].values())
    answers = [p.name for p in project.archives() if p.name.endswith("-programmer.md")]
    assert len(answers) == 2  # cycle 1 and cycle 2, each once


def test_a_prompt_refused_by_a_dead_agent_is_archived_as_refused(project: Project) -> None:
    """The peer analyst dies before its second prompt: the server refuses it (nothing
    typed), the agent comes back and is sent it again; the archive's `-prompt` files are
    the prompts that reached an agent."""
    project.cao.can_restart = True
    cao = project.cao

    def analyst_then_peer_dies(turn: Turn) -> list:
        if turn.count == 2:
            cao.kill(cao.terminal("peer_analyst").id)
        return answer_plan(turn)

    cao.behaviour["analyst"] = analyst_then_peer_dies
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    names = sorted(p.name for p in project.archives())
    refused = [name for name in names if name.endswith("-prompt-refused.md")]
    assert refused == ["007-analyst_review-prompt-refused.md"], names
    assert "008-analyst_review-prompt.md" in names
    assert "009-analyst_review.md" in names  # answered the prompt sent again
    peer = cao.terminal("peer_analyst")
    assert cao.restarted == [peer.id]
