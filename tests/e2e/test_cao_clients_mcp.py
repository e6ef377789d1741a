"""CAO 2.5.4's MCP tools, over its own stdio MCP server, against `baton serve` and real Codex.

The tools run from CAO's own virtualenv as an agent inside a terminal would run them
(CAO_TERMINAL_ID names the calling terminal); the workers are real Codex CLIs answering
from the scripted model server, and the test checks that their real answers come back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.cao.rig import WAIT_SECONDS, CaoRig, cao_rig, response_prompt
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[CaoRig]:
    with cao_rig(tmp_path) as rig:
        yield rig


def test_handoff_runs_a_codex_worker_and_returns_its_answer(rig: CaoRig) -> None:
    supervisor = rig.create_codex()
    prompt = response_prompt(rig.project, "analyst_summary.md", "Analyse the failing test.")
    result = rig.cao.tool(
        "handoff",
        {"agent_profile": "system_analyst", "message": prompt, "timeout": 300},
        terminal_id=supervisor["id"],
    )
    assert result["success"] is True, result
    assert result["message"].startswith("Successfully handed off to system_analyst (codex)")
    answer = rig.response_file("analyst_summary.md").read_text(encoding="utf-8")
    assert answer.startswith("ANALYST_SUMMARY")
    assert result["output"].strip() == answer.strip()
    # The worker is torn down on success; the supervisor stays.
    assert rig.client.get(f"/terminals/{result['terminal_id']}").status_code == 404
    assert rig.client.get(f"/terminals/{supervisor['id']}").json()["status"] == "idle"


def test_assign_send_message_list_siblings_and_delete_terminal(rig: CaoRig) -> None:
    supervisor = rig.create_codex()
    boss = supervisor["id"]
    task = response_prompt(rig.project, "analyst_summary.md", "Analyse the failing test.")
    assigned = rig.cao.tool(
        "assign", {"agent_profile": "system_analyst", "message": task}, terminal_id=boss
    )
    assert assigned["success"] is True, assigned
    worker = assigned["terminal_id"]
    described = rig.client.get(f"/terminals/{worker}").json()
    assert described["caller_id"] == boss
    assert described["session_name"] == supervisor["session_name"]
    # The worker does the assigned task for real.
    wait_until(
        lambda: rig.client.get(f"/terminals/{worker}").json()["status"] == "completed",
        WAIT_SECONDS,
        interval=0.2,
        message="the worker never completed",
    )
    answer = rig.response_file("analyst_summary.md").read_text(encoding="utf-8")
    assert answer.startswith("ANALYST_SUMMARY")
    last = rig.client.get(f"/terminals/{worker}/output", params={"mode": "last"}).json()
    assert last["output"].strip() == answer.strip()

    # Sibling discovery: both in one group (an operator's label), seen from the worker.
    for terminal in (boss, worker):
        labelled = rig.client.patch(f"/terminals/{terminal}/group", json={"group": ["bugfix"]})
        assert labelled.status_code == 200
    siblings = rig.cao.tool("list_siblings", {}, terminal_id=worker)
    assert siblings["success"] is True, siblings
    assert [(s["id"], s["group"]) for s in siblings["siblings"]] == [(boss, ["bugfix"])]
    assert siblings["siblings"][0]["status"] in ("idle", "completed")

    # The worker reports back without naming the receiver: CAO routes it to caller_id.
    report = response_prompt(
        rig.project, "analyst_review.md", f"Worker {worker} finished the analysis. Review it."
    )
    sent = rig.cao.tool("send_message", {"message": report}, terminal_id=worker)
    assert sent["success"] is True, sent
    assert sent["receiver_id"] == boss and sent["sender_id"] == worker
    wait_until(
        lambda: (
            [m["status"] for m in rig.client.get(f"/terminals/{boss}/inbox/messages").json()]
            == ["delivered"]
        ),
        WAIT_SECONDS,
        interval=0.2,
        message="the report never reached the supervisor's inbox",
    )
    wait_until(
        lambda: (
            rig.response_file("analyst_review.md").is_file()
            and rig.client.get(f"/terminals/{boss}").json()["status"] == "completed"
        ),
        WAIT_SECONDS,
        interval=0.2,
        message="the supervisor never reviewed the report",
    )
    reviewed = rig.response_file("analyst_review.md").read_text(encoding="utf-8")
    boss_last = rig.client.get(f"/terminals/{boss}/output", params={"mode": "last"}).json()
    assert boss_last["output"].strip() == reviewed.strip()

    # CAO binds delete_terminal to the caller's own tree, through caller_id.
    refused = rig.cao.tool("delete_terminal", {"terminal_id": boss}, terminal_id=worker)
    assert refused["success"] is False
    assert "may only act on itself or terminals it created" in refused["message"]
    deleted = rig.cao.tool("delete_terminal", {"terminal_id": worker}, terminal_id=boss)
    assert deleted == {"success": True, "message": f"Terminal {worker} deleted successfully"}
    assert rig.client.get(f"/terminals/{worker}").status_code == 404
    assert rig.client.get(f"/terminals/{boss}").status_code == 200
