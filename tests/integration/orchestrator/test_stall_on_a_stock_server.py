"""A stalled agent behind a server that says nothing about progress (the stock CAO shape).

The scripted CAO server's `GET /terminals/{id}` has no `quiet_seconds`, so `baton run`
reads the full output and compares it; the analyst's first turn hangs with unchanging
output until Escape arrives through `POST /terminals/{id}/key`.
"""

from __future__ import annotations

from tests.integration.orchestrator.conftest import Project
from tests.integration.orchestrator.fake_cao import Turn, answer_plan

from baton.orchestrator.events import read_events


def _analyst_hangs_first(turn: Turn) -> list:
    if turn.count == 1:
        return [("status", "processing"), ("output", "• Working"), ("hang", None),
                ("output", "■ Interrupted"), ("status", "idle")]  # fmt: skip
    return answer_plan(turn)


def test_a_stall_is_seen_in_the_full_output_and_interrupted(project: Project) -> None:
    project.cao.behaviour["analyst"] = _analyst_hangs_first
    run = project.run(MAX_ROUNDS="1", STALL_SECONDS="2")
    assert run.returncode == 0, run.stderr
    assert project.state()["final_status"] == "PASS"
    analyst = project.cao.terminal("analyst")
    assert analyst.keys == ["Escape"]
    # The same turn asked again (its explore summary referred back: the CLI has seen it).
    assert "Analyst review cycle: 1" in analyst.prompts[1]
    assert "analyst_summary.md" in analyst.prompts[1]
    full = [
        r for r in project.cao.requests
        if r.path == f"/terminals/{analyst.id}/output" and r.query.get("mode") == "full"
    ]  # fmt: skip
    assert len(full) >= 2  # compared between reads
    steps = [
        e["action"]
        for log in (project.wd / ".tmp").glob("*/events.jsonl")
        for e in read_events(log)
        if e["event"] == "stall"
    ]
    assert steps == ["interrupt", "resend"]
