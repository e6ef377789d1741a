"""Answers lost on a server that does not know `Idempotency-Key` (a stock `cao-server`).

The scripted CAO server acts on a request, then closes the connection without answering,
as a server killed right after acting would. `baton run` does not send such a write
again blindly: a lost create is found in the session and adopted, a lost prompt is seen
to have arrived. The run reaches PASS with five terminals and every prompt typed once.
"""

from __future__ import annotations

from tests.integration.orchestrator.conftest import Project


def test_lost_answers_to_creates_and_a_prompt_type_nothing_twice(project: Project) -> None:
    project.cao.lose_answers = ["/sessions", "/terminals", "/input"]
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    state = project.state()
    assert state["final_status"] == "PASS"
    assert project.cao.lose_answers == []  # every lost answer happened
    live = sorted(terminal.id for terminal in project.cao.live_terminals())
    assert live == sorted(state["terminals"].values()) and len(live) == 5  # no orphan
    prompts = [path for path in project.archives() if path.name.endswith("-prompt.md")]
    inputs = project.cao.inputs()
    assert len(inputs) == len(prompts), run.stderr
    assert len({message for _, message in inputs}) == len(inputs)  # none typed twice
    assert run.stderr.count("the server may have done it") == 2  # the two creates
