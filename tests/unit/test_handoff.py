"""Response files and the poll loop (seeds 000, 002, 004), with a scripted agent API.

The API is a small scripted object (one status per poll, optional file write on a poll)
and time is a manual clock that `sleep` advances, so every rule runs exactly and fast.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from baton.errors import AgentErrorStatus, HandoffTimeout, MissingResponseError
from baton.hints import baton_command
from baton.orchestrator.archive import Archive
from baton.orchestrator.handoff import Handoff
from baton.orchestrator.handoff_pace import HandoffTimings
from baton.orchestrator.response_files import (
    ensure_response_dir,
    response_file_instruction,
    response_path_for,
)
from baton.orchestrator.runlog import RunLog


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class ScriptedApi:
    """Answers get_status from a list (the last entry repeats); runs hooks on given polls."""

    def __init__(self, statuses: list[str], hooks: dict[int, Callable[[], None]] | None = None):
        self.statuses = statuses
        self.hooks = hooks or {}
        self.polls = 0
        self.calls: list[str] = []
        self.sent: list[tuple[str, str]] = []
        self.last_output = "terminal output"

    def send_input(self, terminal_id: str, message: str) -> None:
        self.calls.append("send_input")
        self.sent.append((terminal_id, message))

    def get_status(self, terminal_id: str) -> str:
        self.calls.append("get_status")
        hook = self.hooks.get(self.polls)
        if hook:
            hook()
        status = self.statuses[min(self.polls, len(self.statuses) - 1)]
        self.polls += 1
        return status

    def get_last_output(self, terminal_id: str) -> str:
        self.calls.append("get_last_output")
        return self.last_output


def _handoff(
    tmp_path: Path,
    api: ScriptedApi,
    *,
    strict: bool = True,
    grace: float = 30,
    timeout: float = 1800,
) -> tuple[Handoff, ManualClock, io.StringIO]:
    clock = ManualClock()
    log = io.StringIO()
    handoff = Handoff(
        api,
        tmp_path,
        archive=Archive(tmp_path / ".tmp" / "run"),
        timings=HandoffTimings(poll_seconds=2, idle_grace_seconds=grace, response_timeout=timeout),
        strict=strict,
        log=RunLog(log),
        clock=clock,
        sleep=clock.sleep,
    )
    return handoff, clock, log


def _writer(path: Path, text: str) -> Callable[[], None]:
    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return write


# --- paths, cleanup, directory (seed 000) ---


def test_each_role_resolves_to_the_correct_file(tmp_path: Path) -> None:
    base = tmp_path.resolve() / ".tmp" / "agent-responses"
    expected = {
        "analyst": "analyst_summary.md",
        "analyst_review": "analyst_review.md",
        "programmer": "programmer_summary.md",
        "programmer_review": "programmer_review.md",
        "tester": "test_result.md",
    }
    for role, name in expected.items():
        assert response_path_for(role, tmp_path) == base / name
    assert response_path_for("peer_analyst", tmp_path) == base / "analyst_review.md"


def test_stale_file_from_previous_run_exists(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("old answer")
    handoff, _, _ = _handoff(tmp_path, ScriptedApi(["idle"]))
    handoff.clear_stale_response("analyst")
    assert not path.exists()


def test_stale_file_is_moved_to_the_archive_not_silently_deleted(tmp_path: Path) -> None:
    """Seed 004 archives rather than deletes: a leftover answer is kept, marked stale."""
    path = response_path_for("analyst_review", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("old answer")
    handoff, _, log = _handoff(tmp_path, ScriptedApi(["idle"]))
    handoff.clear_stale_response("analyst_review")
    assert not path.exists()
    kept = tmp_path / ".tmp" / "run" / "001-analyst_review-stale.md"
    assert kept.read_text() == "old answer"
    assert f"archived to {kept}" in log.getvalue()


def test_no_stale_file_exists(tmp_path: Path) -> None:
    handoff, _, log = _handoff(tmp_path, ScriptedApi(["idle"]))
    handoff.clear_stale_response("analyst")  # no error, nothing archived
    assert not (tmp_path / ".tmp" / "run").exists()
    assert log.getvalue() == ""


def test_directory_does_not_exist(tmp_path: Path) -> None:
    directory = ensure_response_dir(tmp_path / "a" / "b")
    assert directory.is_dir()
    assert directory == (tmp_path / "a" / "b").resolve() / ".tmp" / "agent-responses"


# --- the poll loop (seeds 000, 002, 004) ---


def test_agent_writes_response_file_and_terminal_becomes_idle(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    api = ScriptedApi(["processing", "processing", "idle"], {2: _writer(path, "ANALYST_SUMMARY")})
    handoff, _, _ = _handoff(tmp_path, api)
    assert handoff.wait_for_response_file("t1", "analyst") == "ANALYST_SUMMARY"
    assert not path.exists()  # archived, not left behind
    archived = list((tmp_path / ".tmp" / "run").iterdir())
    assert [p.name for p in archived] == ["001-analyst.md"]
    assert archived[0].read_text() == "ANALYST_SUMMARY"


def test_file_is_not_read_while_the_agent_is_still_processing(tmp_path: Path) -> None:
    path = response_path_for("tester", tmp_path)
    api = ScriptedApi(["processing"] * 5 + ["completed"], {1: _writer(path, "RESULT: PASS")})
    handoff, _, _ = _handoff(tmp_path, api)
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"
    assert api.polls == 6


def test_terminal_enters_error_state(tmp_path: Path) -> None:
    api = ScriptedApi(["processing", "error"])
    handoff, _, _ = _handoff(tmp_path, api)
    with pytest.raises(AgentErrorStatus) as raised:
        handoff.wait_for_response_file("t9", "programmer")
    assert isinstance(raised.value, RuntimeError)
    assert "t9" in str(raised.value)


def test_error_status_says_what_the_cli_showed_on_one_line(tmp_path: Path) -> None:
    api = ScriptedApi(["processing", "error"])
    api.last_output = "■ stream disconnected before completion:\n  HTTP 500 from the model"
    handoff, _, _ = _handoff(tmp_path, api)
    with pytest.raises(AgentErrorStatus) as raised:
        handoff.wait_for_response_file("t9", "programmer")
    message = str(raised.value)
    assert "programmer (terminal t9)" in message
    assert "the CLI showed: ■ stream disconnected before completion: HTTP 500 from the model" in (
        message
    )
    assert "\n" not in message


def test_error_state_wins_even_with_a_file(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    api = ScriptedApi(["error"], {0: _writer(path, "x")})
    handoff, _, _ = _handoff(tmp_path, api)
    with pytest.raises(AgentErrorStatus):
        handoff.wait_for_response_file("t1", "analyst")


def test_agent_ignores_file_instruction_but_terminal_finishes_strict_mode(tmp_path: Path) -> None:
    api = ScriptedApi(["processing", "idle"])
    handoff, clock, _ = _handoff(tmp_path, api, strict=True)
    with pytest.raises(MissingResponseError) as raised:
        handoff.wait_for_response_file("t1", "analyst")
    assert isinstance(raised.value, RuntimeError)
    assert "get_last_output" not in api.calls
    assert 30 <= clock.now <= 34  # grace counted from the first idle poll after processing


def test_agent_ignores_file_instruction_but_terminal_finishes_default_mode(tmp_path: Path) -> None:
    api = ScriptedApi(["processing", "completed"])
    api.last_output = "ANALYST_SUMMARY from the screen"
    handoff, _, log = _handoff(tmp_path, api, strict=False)
    assert handoff.wait_for_response_file("t1", "analyst") == "ANALYST_SUMMARY from the screen"
    archived = list((tmp_path / ".tmp" / "run").iterdir())
    assert [p.read_text() for p in archived] == ["ANALYST_SUMMARY from the screen"]
    assert "last terminal output" in log.getvalue()


def test_timeout_with_terminal_still_processing(tmp_path: Path) -> None:
    api = ScriptedApi(["processing"])
    handoff, clock, _ = _handoff(tmp_path, api, timeout=100)
    with pytest.raises(HandoffTimeout) as raised:
        handoff.wait_for_response_file("t1", "tester")
    assert isinstance(raised.value, TimeoutError)
    assert 100 <= clock.now <= 102


def test_stale_idle_before_processing_does_not_start_the_grace_timer(tmp_path: Path) -> None:
    """Seed 002: the old idle prompt is still seen for 40s, longer than the 30s grace, before
    the agent shows it works (60s). Only the startup guard keeps that idle time from counting:
    without it the grace would run out at 30s and the answer be lost."""
    path = response_path_for("programmer", tmp_path)
    statuses = ["idle"] * 20 + ["processing"] * 30 + ["completed"]
    api = ScriptedApi(statuses, {50: _writer(path, "PROGRAMMER_SUMMARY")})
    handoff, clock, _ = _handoff(tmp_path, api, grace=30)
    assert handoff.wait_for_response_file("t1", "programmer") == "PROGRAMMER_SUMMARY"
    assert clock.now == 100


def test_short_stale_idle_is_not_reported_as_a_slow_start(tmp_path: Path) -> None:
    """The old idle prompt seen for 20s, then 60s of work: no startup-guard warning."""
    path = response_path_for("programmer", tmp_path)
    statuses = ["idle"] * 10 + ["processing"] * 30 + ["completed"]
    api = ScriptedApi(statuses, {40: _writer(path, "PROGRAMMER_SUMMARY")})
    handoff, _, log = _handoff(tmp_path, api, grace=30)
    assert handoff.wait_for_response_file("t1", "programmer") == "PROGRAMMER_SUMMARY"
    assert "never showed it started" not in log.getvalue()


def test_startup_guard_is_force_released_after_idle_grace(tmp_path: Path) -> None:
    api = ScriptedApi(["idle"])
    handoff, clock, log = _handoff(tmp_path, api, grace=30)
    with pytest.raises(MissingResponseError):
        handoff.wait_for_response_file("t1", "analyst")
    assert "never showed it started working" in log.getvalue()
    assert 60 <= clock.now <= 64  # startup guard + grace: 2 x IDLE_GRACE_SECONDS


def test_fast_agent_that_wrote_its_file_is_taken_without_ever_seen_processing(
    tmp_path: Path,
) -> None:
    path = response_path_for("tester", tmp_path)
    api = ScriptedApi(["completed"], {0: _writer(path, "RESULT: PASS")})
    handoff, _, _ = _handoff(tmp_path, api)
    assert handoff.wait_for_response_file("t1", "tester") == "RESULT: PASS"


def test_idle_since_resets_on_each_non_idle_poll(tmp_path: Path) -> None:
    """Spinner flicker: idle for 28s, processing again, idle 28s... never reaches the grace."""
    path = response_path_for("analyst", tmp_path)
    flicker = (["processing"] + ["idle"] * 14) * 4
    api = ScriptedApi([*flicker, "processing", "idle"], {len(flicker) + 1: _writer(path, "done")})
    handoff, _, _ = _handoff(tmp_path, api, grace=30)
    assert handoff.wait_for_response_file("t1", "analyst") == "done"


def test_waiting_user_answer_counts_as_started_and_is_logged_once_per_episode(
    tmp_path: Path,
) -> None:
    path = response_path_for("analyst", tmp_path)
    statuses = ["idle"] + ["waiting_user_answer"] * 5 + ["processing"] + ["waiting_user_answer"] * 3
    statuses += ["idle"] * 20
    api = ScriptedApi(statuses, {len(statuses) - 1: _writer(path, "late")})
    handoff, _, log = _handoff(tmp_path, api, grace=30, timeout=10_000)
    with pytest.raises(MissingResponseError):
        # The agent went idle after the dialogs and wrote nothing within the grace.
        handoff.wait_for_response_file("t1", "analyst")
    assert log.getvalue().count("waiting for a user answer") == 2
    assert "analyst (terminal t1)" in log.getvalue()


def test_waiting_user_answer_is_never_treated_as_done(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    api = ScriptedApi(["waiting_user_answer"] * 50 + ["idle"], {3: _writer(path, "answer")})
    handoff, clock, _ = _handoff(tmp_path, api)
    assert handoff.wait_for_response_file("t1", "analyst") == "answer"
    assert clock.now >= 100  # it waited through the dialog


def test_normal_send_and_wait_flow(tmp_path: Path) -> None:
    path = response_path_for("analyst", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("stale")
    api = ScriptedApi(["processing", "idle"])
    api.hooks = {1: _writer(path, "fresh")}
    original_send = api.send_input

    def send(terminal_id: str, message: str) -> None:
        assert not path.exists(), "the stale file must be gone before the prompt is sent"
        original_send(terminal_id, message)

    api.send_input = send  # type: ignore[method-assign]
    handoff, _, _ = _handoff(tmp_path, api)
    assert handoff.send_and_wait("t1", "analyst", "the prompt") == "fresh"
    assert api.calls[0] == "send_input" and api.calls[1] == "get_status"
    assert api.sent == [("t1", "the prompt")]


def test_archive_numbers_answers_and_never_overwrites(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "run")
    first = archive.store_text("one", "analyst")
    second = archive.store_text("two", "analyst_review")
    assert (first.name, second.name) == ("001-analyst.md", "002-analyst_review.md")
    again = Archive(tmp_path / "run")  # a resumed run continues the numbering
    assert again.store_text("three", "tester").name == "003-tester.md"


def test_the_archive_is_private_to_the_user(tmp_path: Path) -> None:
    """Prompts and answers carry the project's code and test output: 0700 / 0600."""
    archive = Archive(tmp_path / "run")
    written = archive.store_text("a prompt", "analyst", suffix="-prompt")
    answer = tmp_path / "analyst.md"
    answer.write_text("ANALYST_SUMMARY", encoding="utf-8")
    answer.chmod(0o644)  # as an agent's shell leaves it
    moved = archive.store_file(answer, "analyst")
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o700
    assert [path.stat().st_mode & 0o777 for path in (written, moved)] == [0o600, 0o600]


def test_response_file_instruction_is_atomic_and_quote_safe(tmp_path: Path) -> None:
    import subprocess

    path = tmp_path / "it's here" / ".tmp" / "agent-responses" / "test_result.md"
    instruction = response_file_instruction(path, token="abc123")
    assert instruction.startswith("RESPONSE FILE INSTRUCTION")
    assert str(path) in instruction
    # Run the command the agent is told to run, with a nasty answer in place.
    lines = instruction.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("mkdir -p"))
    command = "\n".join(lines[start : start + 4])
    answer = "RESULT: PASS\nEVIDENCE: `echo $HOME` \"quoted\" 'single' ünïcødé\nEOF\n"
    command = command.replace("<your complete final response>", answer.rstrip("\n"))
    subprocess.run(["bash", "-c", command], check=True)
    assert path.read_text() == answer
    assert [p.name for p in path.parent.iterdir()] == ["test_result.md"]


def test_long_waits_log_progress_every_so_often(tmp_path: Path) -> None:
    path = response_path_for("programmer", tmp_path)
    api = ScriptedApi(["processing"] * 50 + ["completed"], {50: _writer(path, "done")})
    handoff, _, log = _handoff(tmp_path, api)
    handoff.timings = dataclasses.replace(handoff.timings, heartbeat_seconds=30)
    assert handoff.wait_for_response_file("t1", "programmer") == "done"
    progress = [line for line in log.getvalue().splitlines() if "still working" in line]
    assert len(progress) == 3  # at 30s, 60s and 90s of a 100s wait
    assert "programmer (terminal t1) still working: 30s, processing" in progress[0]


def test_status_changes_reach_the_hook_and_resuming_after_a_wait_is_logged(
    tmp_path: Path,
) -> None:
    path = response_path_for("programmer", tmp_path)
    statuses = ["processing", "waiting_user_answer", "waiting_user_answer", "processing"]
    api = ScriptedApi([*statuses, "completed"], {4: _writer(path, "done")})
    handoff, _, log = _handoff(tmp_path, api)
    seen: list[tuple[str, str, str, str | None]] = []
    handoff.on_status = lambda role, tid, status, previous: seen.append(
        (role.output_key, tid, status, previous)
    )
    handoff.state_file = Path("/runs/state.json")
    assert handoff.wait_for_response_file("t1", "programmer") == "done"
    assert seen == [
        ("programmer", "t1", "processing", None),
        ("programmer", "t1", "waiting_user_answer", "processing"),
        ("programmer", "t1", "processing", "waiting_user_answer"),
        ("programmer", "t1", "completed", "processing"),
    ]
    text = log.getvalue()
    baton = baton_command()  # the executable as this shell runs it
    assert (
        f"answer it with `{baton} answer programmer TEXT --state-file /runs/state.json` "
        "(a menu wants `--key KEY` instead of TEXT) or "
        f"`{baton} attach programmer --state-file /runs/state.json`"
    ) in text
    assert "programmer (terminal t1) resumed after waiting 4s for an answer; now processing" in (
        text
    )


def test_a_failing_status_hook_does_not_stop_the_wait(tmp_path: Path) -> None:
    path = response_path_for("tester", tmp_path)
    api = ScriptedApi(["processing", "completed"], {1: _writer(path, "RESULT: PASS")})
    handoff, _, log = _handoff(tmp_path, api)

    def broken(*_: object) -> None:
        raise OSError("disk full")

    handoff.on_status = broken
    assert handoff.wait_for_response_file("t9", "tester") == "RESULT: PASS"
    assert "cannot record the status of terminal t9: disk full" in log.getvalue()
