"""The version-1 state file: roundtrip, shell compatibility, lenient reading, atomic writes."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

from baton.errors import StateFileError
from baton.orchestrator.awaiting import Awaiting
from baton.orchestrator.state import (
    FinalStatus,
    Phase,
    RunState,
    Step,
    load_state,
    save_state,
    should_auto_resume,
    write_json_atomic,
)

SHELL_FIELDS = [
    "version",
    "updated_at",
    "api",
    "provider",
    "wd",
    "prompt",
    "current_round",
    "current_phase",
    "final_status",
    "session_name",
    "terminals",
    "feedback",
    "analyst_feedback",
    "programmer_feedback",
    "outputs",
]


def _shell_state(**overrides: object) -> dict[str, object]:
    """A state file as the shell script writes it (no Baton additions)."""
    data: dict[str, object] = {
        "version": 1,
        "updated_at": "2026-01-01T00:00:00Z",
        "api": "http://localhost:9889",
        "provider": "codex",
        "wd": "/work/project",
        "prompt": "the prompt",
        "current_round": 2,
        "current_phase": "programmer",
        "final_status": "RUNNING",
        "session_name": "cao-abc",
        "terminals": {
            "analyst": "a1",
            "peer_analyst": "a2",
            "programmer": "p1",
            "peer_programmer": "p2",
            "tester": "t1",
        },
        "feedback": "RESULT: FAIL",
        "analyst_feedback": "None yet.",
        "programmer_feedback": "None yet.",
        "outputs": {
            "analyst": "ANALYST_SUMMARY",
            "analyst_review": "REVIEW_RESULT: APPROVED",
            "programmer": "",
            "programmer_review": "",
            "tester": "",
        },
    }
    data.update(overrides)
    return data


def test_state_roundtrip(tmp_path: Path) -> None:
    state = RunState(
        api="http://x",
        provider="codex",
        wd="/w",
        prompt="p ✓ `$x`",
        current_round=3,
        current_phase="tester",
        session_name="s",
        terminals={
            "analyst": "1",
            "peer_analyst": "2",
            "programmer": "3",
            "peer_programmer": "4",
            "tester": "5",
        },
        feedback="fb",
        analyst_feedback="af",
        programmer_feedback="pf",
        outputs={
            "analyst": "A",
            "analyst_review": "AR",
            "programmer": "P",
            "programmer_review": "",
            "tester": "T",
        },
        current_cycle=2,
        current_step="review",
        awaiting=Awaiting(role="tester", terminal_id="5", sent_at="now"),
        explore_sent=["1", "2"],
        archive_dir="/w/.tmp/x",
    )
    path = tmp_path / "state.json"
    save_state(state, path)
    loaded = load_state(path)
    assert loaded == state
    partial = RunState(terminals={"analyst": "1"})
    save_state(partial, path)
    assert load_state(path).terminals["tester"] == ""
    assert loaded.updated_at.endswith("Z")


def test_saved_file_has_every_shell_field(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_state(RunState(), path)
    data = json.loads(path.read_text())
    assert list(data)[: len(SHELL_FIELDS)] == SHELL_FIELDS
    assert data["version"] == 1
    assert list(data["terminals"]) == [
        "analyst",
        "peer_analyst",
        "programmer",
        "peer_programmer",
        "tester",
    ]
    assert list(data["outputs"]) == [
        "analyst",
        "analyst_review",
        "programmer",
        "programmer_review",
        "tester",
    ]
    assert data["feedback"] == data["analyst_feedback"] == "None yet."


def test_shell_written_state_loads_with_defaults_for_baton_fields(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(extra_shell_field="kept")))
    state = load_state(path)
    assert (state.current_round, state.current_phase, state.session_name) == (
        2,
        "programmer",
        "cao-abc",
    )
    assert state.terminals["tester"] == "t1"
    assert state.outputs["analyst"] == "ANALYST_SUMMARY"
    assert (state.current_cycle, state.current_step, state.awaiting) == (1, "author", None)
    save_state(state, path)
    assert json.loads(path.read_text())["extra_shell_field"] == "kept"


def test_unknown_fields_inside_terminals_and_outputs_are_kept(tmp_path: Path) -> None:
    """A newer writer may add a terminal or an output; saving must not drop it."""
    data = _shell_state()
    data["terminals"] = {**data["terminals"], "reviewer_2": "r2"}  # type: ignore[dict-item]
    data["outputs"] = {**data["outputs"], "notes": {"kept": True}}  # type: ignore[dict-item]
    path = tmp_path / "state.json"
    path.write_text(json.dumps(data))
    state = load_state(path)
    save_state(state, path)
    saved = json.loads(path.read_text())
    assert saved["terminals"]["reviewer_2"] == "r2"
    assert saved["terminals"]["tester"] == "t1"
    assert saved["outputs"]["notes"] == {"kept": True}
    assert list(saved["outputs"])[:5] == list(data["outputs"])[:5]


@pytest.mark.parametrize("bad", ["two", "", None, 0, -3, True, [1]])
def test_invalid_round_in_state_file_defaults_to_1(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(current_round=bad)))
    assert load_state(path).current_round == 1


def test_round_as_numeric_string_is_read(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(current_round="4")))
    assert load_state(path).current_round == 4


@pytest.mark.parametrize("bad", ["review", "", None, 3, "ANALYST"])
def test_invalid_phase_in_state_file_defaults_to_analyst(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(current_phase=bad)))
    assert load_state(path).current_phase == "analyst"


def test_unreadable_state_file_is_a_state_file_error(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("{not json")
    with pytest.raises(StateFileError, match="not valid JSON"):
        load_state(path)
    with pytest.raises(StateFileError, match="no state file"):
        load_state(tmp_path / "missing.json")


def test_a_state_file_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(StateFileError) as raised:
        load_state(path)
    assert str(raised.value) == f"the state file {path} is not valid JSON (nested too deeply)"


def test_auto_resume_when_state_file_has_running_status(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(final_status="RUNNING")))
    assert should_auto_resume(path) is True


@pytest.mark.parametrize("status", ["PASS", "FAIL"])
def test_no_auto_resume_when_state_file_has_pass_or_fail_status(
    tmp_path: Path, status: str
) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(final_status=status)))
    assert should_auto_resume(path) is False


def test_no_auto_resume_when_no_state_file_exists(tmp_path: Path) -> None:
    assert should_auto_resume(tmp_path / "state.json") is False


def test_no_auto_resume_when_phase_is_done(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(_shell_state(current_phase="done", final_status="RUNNING")))
    assert should_auto_resume(path) is False


def test_atomic_write_leaves_no_temp_file_and_keeps_old_content_on_failure(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sub" / "state.json"
    write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})  # not serialisable: nothing is written
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(path.parent) == ["state.json"]


def test_save_state_into_unwritable_place_is_a_state_file_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StateFileError, match="cannot write the state file"):
        save_state(RunState(), blocker / "state.json")


def test_a_save_that_fails_midway_keeps_the_old_state_whole(tmp_path: Path) -> None:
    """A full disk (here: a file-size limit) mid-write leaves the previous state readable."""
    path = tmp_path / "state.json"
    save_state(RunState(prompt="old prompt", current_round=2), path)
    before = path.read_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 4096, hard))
    try:
        with pytest.raises(StateFileError, match="cannot write the state file"):
            save_state(RunState(prompt="new prompt " * 10_000, current_round=3), path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert path.read_bytes() == before
    assert load_state(path).current_round == 2
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_reader_of_the_state_file_never_sees_it_change_under_it(tmp_path: Path) -> None:
    """The shell script or `baton status` may be reading while the loop saves: the file
    they opened stays the old whole document, the next open is the new whole one."""
    path = tmp_path / "state.json"
    save_state(RunState(current_round=1), path)
    with path.open(encoding="utf-8") as reader:
        save_state(RunState(current_round=2, prompt="a longer prompt than before"), path)
        assert json.loads(reader.read())["current_round"] == 1
    assert json.loads(path.read_text())["current_round"] == 2


def test_phase_status_and_step_are_the_shell_script_strings_on_disk(tmp_path: Path) -> None:
    """Typed in memory, the same plain strings in the file the shell script reads."""
    state = RunState(current_phase="tester", final_status="FAIL", current_step="review")  # type: ignore[arg-type]
    assert (state.current_phase, state.final_status, state.current_step) == (
        Phase.TESTER,
        FinalStatus.FAIL,
        Step.REVIEW,
    )
    path = tmp_path / "state.json"
    save_state(state, path)
    text = path.read_text()
    assert '"current_phase": "tester"' in text
    assert '"final_status": "FAIL"' in text
    assert '"current_step": "review"' in text
    again = load_state(path)
    assert again.current_phase is Phase.TESTER and again.final_status is FinalStatus.FAIL


def test_awaiting_keeps_the_state_files_string_shape() -> None:
    """Runs saved by earlier versions resume, and theirs read this one's: strings only."""
    saved = {
        "role": "tester",
        "terminal_id": "t5",
        "sent_at": "now",
        "prompt_file": "/w/.tmp/p.md",
        "stalls": "2",
        "agent_restarted": "1",
        "timed_out_at": "later",
        "added_later": "x",
        "not_a_string": 3,
    }
    awaiting = Awaiting.from_json(saved)
    assert awaiting == Awaiting(
        role="tester",
        terminal_id="t5",
        sent_at="now",
        prompt_file="/w/.tmp/p.md",
        stalls=2,
        agent_restarted=True,
        timed_out_at="later",
        extra={"added_later": "x"},
    )
    assert awaiting.to_json() == {k: v for k, v in saved.items() if k != "not_a_string"}
    plain = Awaiting(role="analyst", terminal_id="t1")
    assert plain.to_json() == {"role": "analyst", "terminal_id": "t1"}
    assert Awaiting.from_json({"role": "analyst"}) is None
    assert Awaiting.from_json({"role": "a", "terminal_id": "t", "stalls": "x"}).stalls == 0
