"""`baton status`: the summary of a state file."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from baton.cockpit.state_view import default_state_file, show_status
from baton.errors import StateFileError
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.state import RunState, save_state


def test_running_state_summary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    state = RunState(
        api="http://127.0.0.1:9889",
        provider="codex",
        wd="/w",
        current_round=3,
        current_phase="programmer",
        current_cycle=2,
        current_step="review",
        session_name="cao-1",
        terminals={"analyst": "a1", "tester": "t1"},
        awaiting=Awaiting(role="programmer_review", terminal_id="p2"),
    )
    save_state(state, path)
    out = io.StringIO()
    assert show_status(path, {}, out=out) == 0
    text = out.getvalue()
    assert "RUNNING: round 3, phase programmer (review cycle 2, review step)" in text
    assert "waiting for programmer_review" in text
    assert "session:    cao-1" in text
    assert "analyst=a1" in text and "tester=t1" in text and "programmer=-" in text
    assert "updated:    20" in text


def test_finished_state_summary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_state(RunState(final_status="PASS", current_phase="done", current_round=2), path)
    out = io.StringIO()
    show_status(path, {}, out=out)
    assert "PASS: finished in round 2" in out.getvalue()


def test_default_state_file_follows_state_file_then_wd(tmp_path: Path) -> None:
    assert default_state_file({"STATE_FILE": "/x/s.json", "WD": "/w"}) == Path("/x/s.json")
    assert default_state_file({"WD": "/w"}) == Path("/w/.tmp/codex-3agents-loop-state.json")


def test_missing_state_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="no state file"):
        show_status(None, {"WD": str(tmp_path)}, out=io.StringIO())


def _finished(tmp_path: Path, status: str, tester: str, feedback: str) -> str:
    path = tmp_path / "state.json"
    state = RunState(
        final_status=status,
        current_phase="done",
        current_round=2,
        feedback=feedback,
        outputs={"tester": tester},
    )
    save_state(state, path)
    out = io.StringIO()
    show_status(path, {}, out=out, live=False)
    return out.getvalue()


def test_after_a_pass_the_summary_does_not_show_an_earlier_rounds_failure(
    tmp_path: Path,
) -> None:
    text = _finished(
        tmp_path,
        "PASS",
        tester="RESULT: PASS\nall 12 tests pass",
        feedback="RESULT: FAIL\nround 1: test_median failed",
    )
    assert "PASS: finished in round 2" in text
    assert "last test:  round 2: RESULT: PASS …" in text
    assert "FAIL" not in text


def test_after_a_fail_the_summary_shows_the_last_test_evidence(tmp_path: Path) -> None:
    text = _finished(
        tmp_path,
        "FAIL",
        tester="RESULT: FAIL\ntest_median still fails",
        feedback="RESULT: FAIL\ntest_median still fails",
    )
    assert "FAIL: finished in round 2" in text
    assert "last test:  round 2: RESULT: FAIL …" in text
    assert "why:" not in text  # the feedback says the same as the last test


def test_a_running_round_names_where_its_feedback_came_from(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_state(RunState(current_round=2, feedback="RESULT: FAIL\nmedian wrong"), path)
    out = io.StringIO()
    show_status(path, {}, out=out, live=False)
    assert "feedback:   RESULT: FAIL … (from round 1's tester)" in out.getvalue()


def test_a_stopped_run_says_how_to_resume_it_and_a_finished_one_does_not(tmp_path: Path) -> None:
    from baton.hints import RunCommand

    path = tmp_path / "state.json"
    command = RunCommand(("run", "loop.json"), "/src/app", {"API": "http://127.0.0.1:9"})
    save_state(RunState(api="http://127.0.0.1:9", wd="/w", command=command), path)
    out = io.StringIO()
    show_status(path, {}, out=out, live=False)
    assert "driver:     none" in out.getvalue()
    assert "resume:     cd /src/app && API=http://127.0.0.1:9 " in out.getvalue()
    assert out.getvalue().splitlines()[3].endswith(" run loop.json")
    save_state(RunState(wd="/w", final_status="PASS", command=command), path)
    out = io.StringIO()
    show_status(path, {}, out=out, live=False)
    assert "resume:" not in out.getvalue()
