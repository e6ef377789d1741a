"""What the cockpit says in words: an answer's outcome, a cost that is only partly known."""

from __future__ import annotations

from pathlib import Path

from baton.cockpit.control import Agent, describe_answer
from baton.cockpit.record import TokenUsage
from baton.hints import baton_command
from baton.orchestrator.state import RunState
from baton.roles import ROLE_BY_TERMINAL


def _agent(tmp_path: Path) -> Agent:
    return Agent(RunState(api="http://127.0.0.1:1"), ROLE_BY_TERMINAL["programmer"], "t1", tmp_path)


def test_an_answer_says_what_was_done_and_what_the_agent_does_now(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    attach = baton_command("attach", "programmer", "--state-file", tmp_path)
    still = describe_answer(agent, None, ["Down", "Enter"], "waiting_user_answer")
    assert still == (
        "pressed Down Enter in programmer (terminal t1); the agent is still showing a "
        f"question (look: {attach})"
    )
    working = describe_answer(agent, "yes please", ["Enter"], "processing")
    assert working == (
        "typed 10 characters and pressed Enter in programmer (terminal t1); "
        "answered, the agent is working"
    )
    assert "waiting_user_answer" not in working
    rest = describe_answer(agent, "ok", [], "completed")
    assert rest.endswith("the agent is at rest (completed)")
    assert "reports an error" in describe_answer(agent, "ok", [], "error")


def test_a_cost_says_when_it_is_partial() -> None:
    usage = TokenUsage()
    usage.add({"input_tokens": 1000, "output_tokens": 10, "model": "gpt-5", "cost_usd": 0.5})
    assert usage.cost_text() == "$0.5000"
    usage.add({"input_tokens": 200, "output_tokens": 5, "model": "my-local-model"})
    assert usage.cost_text() == "$0.5000+ (partial: no price for my-local-model)"
    assert usage.cost_text(3, short=True) == "$0.500+"
    total = TokenUsage()
    total.merge(usage)
    assert total.unpriced == {"my-local-model"}
    unknown = TokenUsage()
    unknown.add({"input_tokens": 5, "output_tokens": 5, "model": "m"})
    assert unknown.cost_text() == "$0.0000+ (partial: no price for m)"
    assert TokenUsage().cost_text() is None
