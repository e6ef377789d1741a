"""The file handoff as `baton run` lives it: startup race, strict/fallback, error, timeout."""

from __future__ import annotations

from tests.integration.orchestrator.conftest import Project
from tests.integration.orchestrator.fake_cao import Turn, answer_plan, canned_answer

from baton.orchestrator.events import read_events


def test_startup_race_with_a_stale_idle_status(project: Project) -> None:
    """The programmer shows its old idle prompt longer than IDLE_GRACE_SECONDS, then works."""
    project.cao.behaviour["programmer"] = lambda turn: answer_plan(turn, stale_idle=1.0)
    run = project.run(IDLE_GRACE_SECONDS="0.7", MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    assert "did not write" not in run.stderr


def test_agent_that_never_starts_is_released_after_the_guard(project: Project) -> None:
    project.cao.behaviour["analyst"] = lambda turn: []  # input taken, nothing ever happens
    run = project.run(IDLE_GRACE_SECONDS="0.3")
    assert run.returncode == 1
    assert "never showed it started working" in run.stderr
    assert "did not write" in run.stderr


def _no_file(turn: Turn) -> list:
    text = canned_answer(turn)
    return [("status", "processing"), ("sleep", 0.1), ("output", text), ("status", "completed")]


def test_strict_mode_stops_when_the_agent_writes_no_file(project: Project) -> None:
    project.cao.behaviour["peer_analyst"] = _no_file
    run = project.run(IDLE_GRACE_SECONDS="0.3")
    assert run.returncode == 1
    lines = [line for line in run.stderr.splitlines() if line.startswith("baton: error:")]
    assert len(lines) == 1
    assert "analyst_review.md" in lines[0] and "STRICT_FILE_HANDOFF" in lines[0]
    assert "Traceback" not in run.stderr
    state = project.state()
    assert state["final_status"] == "RUNNING"  # resumable
    assert state["current_phase"] == "analyst" and state["current_step"] == "review"
    assert not any(r.path.endswith("/output") for r in project.cao.requests)


def test_fallback_mode_uses_the_terminal_output(project: Project) -> None:
    project.cao.behaviour["peer_analyst"] = _no_file
    run = project.run(IDLE_GRACE_SECONDS="0.3", STRICT_FILE_HANDOFF="0", MAX_FILE_REMINDERS="0")
    assert run.returncode == 0, run.stderr
    assert "using its last terminal output" in run.stderr
    reviews = [p for p in project.archives() if p.name.endswith("-analyst_review.md")]
    assert reviews and reviews[0].read_text().startswith("REVIEW_RESULT: REVISE")
    assert any(
        r.path.endswith("/output") and r.query == {"mode": "last"} for r in project.cao.requests
    )


def test_error_state(project: Project) -> None:
    project.cao.behaviour["programmer"] = lambda turn: [
        ("status", "processing"),
        ("sleep", 0.1),
        ("status", "error"),
    ]
    run = project.run()
    assert run.returncode == 1
    assert "programmer (terminal" in run.stderr and "status error" in run.stderr
    state = project.state()
    assert state["final_status"] == "RUNNING" and state["current_phase"] == "programmer"


def test_response_timeout(project: Project) -> None:
    project.cao.behaviour["tester"] = lambda turn: [("status", "processing")]
    run = project.run(RESPONSE_TIMEOUT="0.5")
    assert run.returncode == 1
    assert "tester (terminal" in run.stderr and "RESPONSE_TIMEOUT=0.5" in run.stderr
    assert project.state()["current_phase"] == "tester"


def test_waiting_user_answer_is_reported_and_waited_out(project: Project) -> None:
    def dialog_first(turn: Turn) -> list:
        return [("status", "waiting_user_answer"), ("sleep", 0.8), *answer_plan(turn)]

    project.cao.behaviour["tester"] = dialog_first
    run = project.run(IDLE_GRACE_SECONDS="0.3")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("is waiting for a user answer") == 1
    assert "tester (terminal" in run.stderr


def test_a_leftover_response_file_is_archived_as_stale_and_never_taken(project: Project) -> None:
    """A test_result.md saying PASS from an earlier run must not end this one."""
    leftover = project.wd / ".tmp" / "agent-responses" / "test_result.md"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("RESULT: PASS\nEVIDENCE:\n- from an old run\n", encoding="utf-8")
    project.cao.behaviour["tester"] = lambda turn: answer_plan(turn, tester_passes=False)
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 1, run.stderr
    names = [p.name for p in project.archives()]
    assert names[-3:] == ["017-tester-stale.md", "018-tester-prompt.md", "019-tester.md"]
    assert "from an old run" in (project.archives()[-3]).read_text(encoding="utf-8")
    assert project.state()["outputs"]["tester"].startswith("RESULT: FAIL")


def test_an_agent_that_forgot_its_file_is_reminded(project: Project) -> None:
    def programmer(turn: Turn) -> list:
        if turn.count == 1:  # works, then rests without writing its file
            return [("status", "processing"), ("sleep", 0.2), ("status", "completed")]
        return answer_plan(turn)

    project.cao.behaviour["programmer"] = programmer
    run = project.run(MAX_ROUNDS="1")
    assert run.returncode == 0, run.stderr
    prompts = project.cao.terminal("programmer").prompts
    reminder = prompts[1]
    assert reminder.startswith("REMINDER:")
    path = project.wd / ".tmp" / "agent-responses" / "programmer_summary.md"
    assert str(path) in reminder and "mv -f" in reminder
    assert len(reminder.splitlines()) <= 8  # short: the file and the command
    assert run.stderr.count("reminding it") == 1
    events = [e for e in read_events(next(project.wd.glob(".tmp/2*/events.jsonl")))]
    reminders = [e for e in events if e["event"] == "reminder"]
    assert [(e["role"], e["reminder"]) for e in reminders] == [("programmer", 1)]


def test_reminders_run_out_then_strict_failure(project: Project) -> None:
    project.cao.behaviour["analyst"] = lambda turn: [
        ("status", "processing"),
        ("sleep", 0.1),
        ("status", "completed"),
    ]
    run = project.run(MAX_FILE_REMINDERS="2")
    assert run.returncode == 1
    assert run.stderr.count("reminding it") == 2
    assert [p.startswith("REMINDER:") for p in project.cao.terminal("analyst").prompts] == [
        False,
        True,
        True,
    ]
    assert "STRICT_FILE_HANDOFF=1" in run.stderr.splitlines()[-1]
