"""The orchestration flow of seed 001, run in-process (`run_orchestrator(Settings(...))`).

The agents are the scripted CAO server of the integration tests (real HTTP on 127.0.0.1),
so these also show that `baton demo` can build Settings in code and call the loop.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.orchestrator.fake_cao import FakeCao, Turn, answer_plan

from baton.errors import AgentRestartsExhausted, RunInterrupted, StateFileError
from baton.orchestrator.config import Settings
from baton.orchestrator.loop import run_orchestrator
from baton.orchestrator.runlog import RunLog
from baton.orchestrator.state import RunState, save_state

PROMPT = "*** ORIGINAL EXPLORE SUMMARY ***\nexplore\n*** SCENARIO TEST ***\nscenario\n"
TERMINAL_KEYS = ["analyst", "peer_analyst", "programmer", "peer_programmer", "tester"]


@pytest.fixture
def cao() -> Iterator[FakeCao]:
    with FakeCao() as server:
        yield server


def _settings(cao: FakeCao, wd: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "api": cao.url,
        "wd": wd,
        "prompt": PROMPT,
        "poll_seconds": 0.05,
        "idle_grace_seconds": 0.5,
        "response_timeout": 30,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def _run(settings: Settings) -> tuple[int, str]:
    log = io.StringIO()
    code = run_orchestrator(settings, log=RunLog(log))
    return code, log.getvalue()


def _state(wd: Path) -> dict:
    return json.loads((wd / ".tmp" / "codex-3agents-loop-state.json").read_text())


def _existing_team(cao: FakeCao, wd: Path) -> dict[str, str]:
    first = cao.add_terminal("system_analyst", wd=str(wd))
    ids = [first.id] + [
        cao.add_terminal(p, session_name=first.session_name, wd=str(wd)).id
        for p in ("peer_system_analyst", "programmer", "peer_programmer", "tester")
    ]
    return dict(zip(TERMINAL_KEYS, ids, strict=True))


def test_pass_exits_with_code_0(cao: FakeCao, tmp_path: Path) -> None:
    code, log = _run(_settings(cao, tmp_path))
    assert code == 0
    state = _state(tmp_path)
    assert (state["final_status"], state["current_phase"]) == ("PASS", "done")
    assert "RESULT: PASS" in log


def test_fail_loops_back_to_analyst(cao: FakeCao, tmp_path: Path) -> None:
    cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=turn.count > 1)
    code, _ = _run(_settings(cao, tmp_path))
    assert code == 0
    roles = [role for role, _ in cao.inputs()]
    tester_at = roles.index("tester")
    assert roles[tester_at + 1] == "analyst"
    round_two = cao.terminal("analyst").prompts[2]
    assert "Round: 2" in round_two and "RESULT: FAIL" in round_two
    assert _state(tmp_path)["current_round"] == 2


def test_max_rounds_exhausted_exits_with_code_1(cao: FakeCao, tmp_path: Path) -> None:
    cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=False)
    code, _ = _run(_settings(cao, tmp_path, max_rounds=1))
    assert code == 1
    state = _state(tmp_path)
    assert state["final_status"] == "FAIL"
    assert state["feedback"].startswith("RESULT: FAIL")


def test_missing_analyst_output_falls_back_to_analyst_phase(cao: FakeCao, tmp_path: Path) -> None:
    terminals = _existing_team(cao, tmp_path)
    state = RunState(
        api=cao.url,
        wd=str(tmp_path),
        prompt=PROMPT,
        current_phase="programmer",
        session_name="fake-1",
        terminals=terminals,
    )
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    code, log = _run(_settings(cao, tmp_path))
    assert code == 0
    assert cao.inputs()[0][0] == "analyst"
    assert "no analyst output" in log


def test_missing_programmer_output_falls_back_to_programmer_phase(
    cao: FakeCao, tmp_path: Path
) -> None:
    terminals = _existing_team(cao, tmp_path)
    state = RunState(
        api=cao.url,
        wd=str(tmp_path),
        prompt=PROMPT,
        current_phase="tester",
        session_name="fake-1",
        terminals=terminals,
        outputs={"analyst": "ANALYST_SUMMARY"},
    )
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    assert _run(_settings(cao, tmp_path))[0] == 0
    assert cao.inputs()[0][0] == "programmer"


def test_sigint_saves_state(cao: FakeCao, tmp_path: Path) -> None:
    started = threading.Event()

    def programmer(turn: Turn) -> list:
        started.set()
        return [("status", "processing")]  # works forever

    cao.behaviour["programmer"] = programmer

    def interrupt() -> None:
        started.wait(30)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    try:
        with pytest.raises(RunInterrupted) as raised:
            _run(_settings(cao, tmp_path))
    finally:
        thread.join()
    assert raised.value.signum == signal.SIGINT
    assert 128 + raised.value.signum == 130
    state = _state(tmp_path)
    assert state["final_status"] == "RUNNING"
    assert state["current_phase"] == "programmer"
    assert state["awaiting"]["role"] == "programmer"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers restored


def test_cleanup_exits_terminals_when_enabled(cao: FakeCao, tmp_path: Path) -> None:
    code, _ = _run(_settings(cao, tmp_path, cleanup_on_exit=True, max_rounds=1))
    assert code == 0
    assert sorted(t.id for t in cao.terminals.values() if t.exited) == sorted(
        _state(tmp_path)["terminals"].values()
    )


def test_new_run_creates_5_terminals(cao: FakeCao, tmp_path: Path) -> None:
    _run(_settings(cao, tmp_path, max_rounds=1))
    assert [r.query["agent_profile"] for r in cao.posts("/sessions")] == ["system_analyst"]
    # The other four are created at once: in any order.
    assert sorted(r.query["agent_profile"] for r in cao.posts("/terminals")) == [
        "peer_programmer",
        "peer_system_analyst",
        "programmer",
        "tester",
    ]
    assert list(_state(tmp_path)["terminals"]) == TERMINAL_KEYS


def test_resume_with_unreachable_terminal_past_agent_restarts_fails(
    cao: FakeCao, tmp_path: Path
) -> None:
    terminals = _existing_team(cao, tmp_path)
    cao.forget(terminals["peer_programmer"])
    state = RunState(api=cao.url, prompt=PROMPT, session_name="fake-1", terminals=terminals)
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    with pytest.raises(AgentRestartsExhausted, match=r"peer programmer \(terminal \w+\) died"):
        _run(_settings(cao, tmp_path, agent_restarts=0))
    assert cao.inputs() == []


def test_auto_resume_when_state_file_has_running_status(cao: FakeCao, tmp_path: Path) -> None:
    terminals = _existing_team(cao, tmp_path)
    state = RunState(api=cao.url, prompt=PROMPT, session_name="fake-1", terminals=terminals)
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    code, log = _run(_settings(cao, tmp_path, prompt=None))
    assert code == 0
    assert cao.posts("/sessions") == []
    assert "resuming the run" in log


@pytest.mark.parametrize("status", ["PASS", "FAIL"])
def test_no_auto_resume_when_state_file_has_pass_or_fail_status(
    cao: FakeCao, tmp_path: Path, status: str
) -> None:
    state = RunState(api=cao.url, prompt=PROMPT, final_status=status, current_phase="done")
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    assert _run(_settings(cao, tmp_path, max_rounds=1))[0] == 0
    assert len(cao.posts("/sessions")) == 1


def test_no_auto_resume_when_no_state_file_exists(cao: FakeCao, tmp_path: Path) -> None:
    assert _run(_settings(cao, tmp_path, max_rounds=1))[0] == 0
    assert len(cao.posts("/sessions")) == 1


def test_resume_0_starts_a_new_run_even_with_a_running_state(cao: FakeCao, tmp_path: Path) -> None:
    terminals = _existing_team(cao, tmp_path)
    state = RunState(api=cao.url, prompt=PROMPT, session_name="fake-1", terminals=terminals)
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    assert _run(_settings(cao, tmp_path, max_rounds=1, resume=False))[0] == 0
    assert len(cao.posts("/sessions")) == 1


def test_unreadable_state_file_is_not_overwritten(cao: FakeCao, tmp_path: Path) -> None:
    path = tmp_path / ".tmp" / "codex-3agents-loop-state.json"
    path.parent.mkdir(parents=True)
    path.write_text("{torn")
    with pytest.raises(StateFileError, match="not valid JSON"):
        _run(_settings(cao, tmp_path))
    assert path.read_text() == "{torn"


def test_approval_resets_the_phase_feedback_to_none_yet(cao: FakeCao, tmp_path: Path) -> None:
    """As the earlier Python orchestrator: an approved phase leaves no stale peer feedback."""
    assert _run(_settings(cao, tmp_path, max_rounds=1))[0] == 0
    state = _state(tmp_path)
    assert state["analyst_feedback"] == "None yet."
    assert state["programmer_feedback"] == "None yet."


def test_no_approval_feedback_says_did_not_approve_after_max_review_cycles(
    cao: FakeCao, tmp_path: Path
) -> None:
    cao.behaviour["peer_programmer"] = lambda turn: answer_plan(
        turn, "REVIEW_RESULT: REVISE\nREVIEW_NOTES:\n- still missing P3\n"
    )
    assert _run(_settings(cao, tmp_path, max_rounds=1, max_review_cycles=2))[0] == 0
    assert _state(tmp_path)["feedback"] == (
        "Peer programmer did not approve after MAX_REVIEW_CYCLES. Latest review:\n"
        "REVIEW_NOTES:\n- still missing P3"
    )


def test_a_failed_round_starts_the_next_with_no_peer_feedback(cao: FakeCao, tmp_path: Path) -> None:
    """The peers never approved in round 1; after the tester's FAIL, round 2 starts afresh:
    "None yet." for both peers' feedback (the tester's evidence is the new feedback)."""
    for peer in ("peer_analyst", "peer_programmer"):
        cao.behaviour[peer] = lambda turn, who=peer: answer_plan(
            turn, f"REVIEW_RESULT: REVISE\nREVIEW_NOTES:\n- {who} wants more\n"
        )
    cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=turn.count > 1)
    assert _run(_settings(cao, tmp_path, max_rounds=2, max_review_cycles=1))[0] == 0
    for role, peer in (("analyst", "peer_analyst"), ("programmer", "peer_programmer")):
        round_two = next(p for p in cao.terminal(role).prompts if "Round: 2" in p)
        feedback = round_two.split(f"Latest {peer.replace('_', ' ')} feedback", 1)[1]
        assert feedback.lstrip(":\n ").startswith("None yet."), feedback[:200]
        assert f"{peer} wants more" not in round_two


def test_uncondensed_review_feedback_also_passes_the_whole_tester_answer(
    cao: FakeCao, tmp_path: Path
) -> None:
    tester_text = "Ran the scenario.\nRESULT: FAIL\nEVIDENCE:\n- 1 failed\n"
    cao.behaviour["tester"] = lambda turn: answer_plan(
        turn, tester_text if turn.count == 1 else None
    )
    assert _run(_settings(cao, tmp_path, condense_review_feedback=False))[0] == 0
    assert "Ran the scenario.\nRESULT: FAIL" in cao.terminal("analyst").prompts[2]


@pytest.mark.parametrize(("status", "code"), [("PASS", 0), ("FAIL", 1)])
def test_resume_1_of_a_finished_run_reports_its_result(
    cao: FakeCao, tmp_path: Path, status: str, code: int
) -> None:
    state = RunState(api=cao.url, prompt=PROMPT, final_status=status, current_phase="done")
    save_state(state, tmp_path / ".tmp" / "codex-3agents-loop-state.json")
    before = (tmp_path / ".tmp" / "codex-3agents-loop-state.json").read_text()
    result, log = _run(_settings(cao, tmp_path, resume=True))
    assert result == code
    assert f"already finished with {status}" in log
    assert cao.requests == []
    assert (tmp_path / ".tmp" / "codex-3agents-loop-state.json").read_text() == before
