"""Against a server without `/terminals/{id}/usage` (a stock `cao-server`): no tokens."""

from __future__ import annotations

from tests.integration.orchestrator.conftest import Project, cao, project  # noqa: F401
from tests.integration.orchestrator.fake_cao import answer_plan

from baton.orchestrator.events import read_events


def test_no_usage_route_means_no_tokens_and_one_info_line(project: Project) -> None:  # noqa: F811
    project.cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=True)
    run = project.run(MAX_TOKENS="10")
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if "no token usage" in line]
    assert len(lines) == 1
    assert "/terminals/{id}/usage" in lines[0]
    (log,) = (project.wd / ".tmp").glob("2*/events.jsonl")
    kinds = [event["event"] for event in read_events(log)]
    assert "prompt_sent" in kinds
    assert "tokens" not in kinds and "budget" not in kinds
    assert any(request.path.endswith("/usage") for request in project.cao.requests)
