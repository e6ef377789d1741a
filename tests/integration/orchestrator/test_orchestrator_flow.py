"""`baton run` end to end against the scripted CAO server: rounds, review cycles, prompts."""

from __future__ import annotations

import json
import threading

from tests.integration.orchestrator.conftest import Project
from tests.integration.orchestrator.fake_cao import Turn, answer_plan

from baton.orchestrator.events import read_events
from baton.orchestrator.prompts import EXPLORE_BACK_REFERENCE, UPSTREAM_BACK_REFERENCE

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


def _fail_then_pass(turn: Turn) -> list:
    return answer_plan(turn, tester_passes=turn.count > 1)


def test_full_loop_fail_then_pass(project: Project) -> None:
    cao = project.cao
    cao.behaviour["tester"] = _fail_then_pass
    run = project.run()
    assert run.returncode == 0, run.stderr

    assert [role for role, _ in cao.inputs()] == ROUND + ROUND
    # One session with the analyst profile, then four terminals in it (created at once, so
    # in any order), all in WD.
    created = cao.posts("/sessions") + cao.posts("/terminals")
    assert [r.query["agent_profile"] for r in cao.posts("/sessions")] == ["system_analyst"]
    assert sorted(r.query["agent_profile"] for r in cao.posts("/terminals")) == [
        "peer_programmer",
        "peer_system_analyst",
        "programmer",
        "tester",
    ]
    assert all(r.query["provider"] == "codex" for r in created)
    assert all(r.query["working_directory"] == str(project.wd) for r in created)
    session = cao.sessions[0]
    assert all(r.path == f"/sessions/{session}/terminals" for r in cao.posts("/terminals"))

    state = project.state()
    assert state["final_status"] == "PASS"
    assert state["current_phase"] == "done"
    assert state["current_round"] == 2
    assert state["outputs"]["tester"].startswith("RESULT: PASS")
    assert state["session_name"] == session

    # Every prompt and answer archived, numbered, by role; nothing left in agent-responses.
    names = [p.name for p in project.archives()]
    assert len(names) == 36
    assert names[:2] == ["001-analyst-prompt.md", "002-analyst.md"]
    assert names[16:18] == ["017-tester-prompt.md", "018-tester.md"]
    assert list((project.wd / ".tmp" / "agent-responses").iterdir()) == []
    assert "PASS" in run.stderr and "round 2/8" in run.stderr

    # The run record: start, 18 prompts and answers, 4 gate decisions a round, 2 verdicts, end.
    events = [e["event"] for e in read_events(project.archives()[0].parent / "events.jsonl")]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("prompt_sent") == events.count("answer") == 18
    assert events.count("gate") == 8 and events.count("verdict") == 2


def test_prompts_carry_feedback_back_references_and_condensed_upstream(project: Project) -> None:
    cao = project.cao
    cao.behaviour["tester"] = _fail_then_pass
    assert project.run(PROJECT_TEST_CMD="make check").returncode == 0
    inputs = cao.inputs()
    by_role: dict[str, list[str]] = {}
    for role, message in inputs:
        by_role.setdefault(role, []).append(message)

    summary = "The report lives in src/report.py; totals are missing."
    for role, messages in by_role.items():
        if role != "tester":
            assert summary in messages[0], role  # first send: the full explore summary
            assert summary not in messages[1] and EXPLORE_BACK_REFERENCE in messages[1], role
    # Programmer: analyst output on cycle 1, a back-reference on cycle 2.
    assert "ANALYST_SUMMARY" in by_role["programmer"][0]
    assert UPSTREAM_BACK_REFERENCE in by_role["programmer"][1]
    assert "use this project test command: make check" in by_role["programmer"][0]
    # Cycle 2 carries the peer's condensed notes as feedback.
    assert "REVIEW_NOTES:" in by_role["analyst"][1]
    assert "Name the test that proves P2" in by_role["analyst"][1]
    # Round 2's analyst prompt carries the tester's condensed evidence.
    round_two = by_role["analyst"][2]
    assert "Round: 2" in round_two
    assert "RESULT: FAIL" in round_two and "EVIDENCE:" in round_two
    assert "include the last item in the sum" in round_two
    # The tester gets the scenario and the programmer's summary.
    assert by_role["tester"][0].startswith("*** SCENARIO TEST ***\nRun `make e2e`")
    assert "PROGRAMMER_SUMMARY" in by_role["tester"][0]
    for _, message in inputs:
        assert "RESPONSE FILE INSTRUCTION" in message


def test_max_rounds_exhausted(project: Project) -> None:
    project.cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=False)
    run = project.run(MAX_ROUNDS="2")
    assert run.returncode == 1, run.stderr
    state = project.state()
    assert state["final_status"] == "FAIL"
    assert state["current_round"] == 2
    assert [role for role, _ in project.cao.inputs()].count("tester") == 2
    assert "MAX_ROUNDS=2" in run.stderr
    assert "Traceback" not in run.stderr


def test_review_cycles_and_the_evidence_gate(project: Project) -> None:
    """Approvals on cycle 1 and without evidence are ignored; cycle 3 approves for real."""

    def peer_analyst(turn: Turn) -> list:
        texts = {
            1: "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\n- proposal, P1, contract, handoff.\n",
            2: "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\n- looks fine to me\n",
            3: "REVIEW_RESULT: APPROVED\nREVIEW_NOTES:\n- artifacts, P1-P4 traceability, "
            "downstream contract and an actionable handoff all hold.\n",
        }
        return answer_plan(turn, texts[turn.count])

    project.cao.behaviour["peer_analyst"] = peer_analyst
    run = project.run()
    assert run.returncode == 0, run.stderr
    roles = [role for role, _ in project.cao.inputs()]
    assert roles[:7] == ["analyst", "peer_analyst"] * 3 + ["programmer"]
    assert "APPROVED on cycle 1 ignored: MIN_REVIEW_CYCLES_BEFORE_APPROVAL=2" in run.stderr
    assert "APPROVED ignored: 0 of 4 evidence patterns" in run.stderr


def test_no_approval_after_max_review_cycles_proceeds_with_feedback(project: Project) -> None:
    def never(turn: Turn) -> list:
        return answer_plan(turn, "REVIEW_RESULT: REVISE\nREVIEW_NOTES:\n- still missing P3\n")

    project.cao.behaviour["peer_programmer"] = never
    run = project.run(MAX_REVIEW_CYCLES="2")
    assert run.returncode == 0, run.stderr
    roles = [role for role, _ in project.cao.inputs()]
    assert roles.count("peer_programmer") == 2
    assert roles[-1] == "tester"
    state = project.state()
    assert state["feedback"].startswith(
        "Peer programmer did not approve after MAX_REVIEW_CYCLES. Latest review:\n"
    )
    assert "still missing P3" in state["feedback"]


def test_evidence_gate_can_be_turned_off(project: Project) -> None:
    def bare(turn: Turn) -> list:
        return answer_plan(turn, "REVIEW_RESULT: APPROVED\n")

    project.cao.behaviour["peer_analyst"] = bare
    project.cao.behaviour["peer_programmer"] = bare
    run = project.run(MIN_REVIEW_CYCLES_BEFORE_APPROVAL="1", REQUIRE_REVIEW_EVIDENCE="0")
    assert run.returncode == 0, run.stderr
    assert [role for role, _ in project.cao.inputs()] == [
        "analyst",
        "peer_analyst",
        "programmer",
        "peer_programmer",
        "tester",
    ]


def test_prompt_arrives_byte_exact(project: Project) -> None:
    explore = 'He said "don\'t" — costs $HOME `whoami` $(id) \\n ünïcødé ✓ 🚀\n\ttabbed line'
    scenario = "Run `echo \"$PATH\"` and 'check' ≥ 3 lines; 100% done & <ok>"
    prompt = f"*** ORIGINAL EXPLORE SUMMARY ***\n{explore}\n*** SCENARIO TEST ***\n{scenario}\n"
    run = project.run(PROMPT=prompt)
    assert run.returncode == 0, run.stderr
    inputs = dict(reversed(project.cao.inputs()))  # first message of each role
    assert explore in inputs["analyst"]
    assert scenario in inputs["tester"]
    assert project.state()["prompt"] == prompt


def test_prompt_file_and_json_config_with_role_overrides(project: Project) -> None:
    prompt_file = project.wd.parent / "prompt.md"
    prompt_file.write_text(project.env["PROMPT"], encoding="utf-8")
    config = project.wd.parent / "baton.json"
    config.write_text(
        json.dumps(
            {
                "prompt_file": "prompt.md",
                "limits": {"max_rounds": 1},
                "agents": {"programmer": {"provider": "claude_code"}},
            }
        )
    )
    env = {k: v for k, v in project.env.items() if k != "PROMPT"}
    project.env = env
    run = project.run(str(config))
    assert run.returncode == 0, run.stderr
    created = project.cao.posts("/sessions") + project.cao.posts("/terminals")
    providers = {r.query["agent_profile"]: r.query["provider"] for r in created}
    assert providers["programmer"] == "claude_code"
    assert providers["tester"] == "codex"


def test_bearer_token_reaches_the_server(project: Project) -> None:
    project.cao.token = "tok-123"
    run = project.run(BATON_TOKEN="tok-123")
    assert run.returncode == 0, run.stderr
    assert all(
        r.headers.get("Authorization") == "Bearer tok-123"
        for r in project.cao.requests
        if r.path != "/health"
    )


def test_hostile_tester_evidence_reaches_the_analyst_as_visible_text(project: Project) -> None:
    """A failing test printed a paste end, Ctrl-U, `/exit` and a CR: the next prompt shows them."""
    hostile = "AssertionError: got \x1b[201~\x15/exit\r and \x00 and \x1b[31mred\x1b[0m"

    def tester(turn: Turn) -> list:
        if turn.count == 1:
            text = f"RESULT: FAIL\nEVIDENCE:\n- make test: {hostile}\nNEXT_FIX: fix it\n"
            return answer_plan(turn, text)
        return answer_plan(turn)

    project.cao.behaviour["tester"] = tester
    run = project.run(MAX_ROUNDS="2")
    assert run.returncode == 0, run.stderr
    round_two = [
        message
        for role, message in project.cao.inputs()
        if role == "analyst" and "Round: 2" in message
    ]
    assert round_two
    prompt = round_two[0]
    assert "␛[201~␕/exit" in prompt and "␀" in prompt and "␛[31mred␛[0m" in prompt
    assert not any(char in prompt for char in "\x1b\x15\x00\r")


def test_the_analyst_works_while_its_teammates_start(project: Project) -> None:
    cao = project.cao
    cao.terminal_creates_wait = threading.Event()
    terminals_at_first_prompt: list[int] = []

    def analyst(turn: Turn) -> list:
        if not terminals_at_first_prompt:  # then let the other four creates finish
            terminals_at_first_prompt.append(len(cao.terminals))
            assert cao.terminal_creates_wait is not None
            cao.terminal_creates_wait.set()
        return answer_plan(turn)

    cao.behaviour["analyst"] = analyst
    run = project.run()
    assert run.returncode == 0, run.stderr
    # The analyst had its prompt while the four other terminals were still being made.
    assert terminals_at_first_prompt == [1]
    assert [role for role, _ in cao.inputs()] == ROUND
    assert all(project.state()["terminals"].values())
