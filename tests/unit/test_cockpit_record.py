"""The run record folded for the views: turns, waits, verdicts, tokens, read defensively."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from baton.cockpit.record import describe_event, fold_events, role_from_name
from baton.cockpit.report.timeline import layout_timeline
from baton.cockpit.watch import Watcher, printable
from baton.errors import BadRequestError
from baton.orchestrator.state import RunState
from baton.server.controls import validate_key


def _e(second: int, event: str, **fields: Any) -> dict[str, Any]:
    return {"ts": f"2026-11-23T07:00:{second:02d}.000Z", "event": event, **fields}


EVENTS = [
    _e(0, "run_start", providers={"analyst": "codex", "tester": 7}, git_head="abc123"),
    _e(1, "prompt_sent", role="analyst", terminal_id="a1", round=1, phase="analyst", cycle=1,
       chars=100),
    _e(2, "status", role="analyst", terminal_id="a1", status="processing", previous=None),
    _e(3, "status", role="analyst", terminal_id="a1", status="waiting_user_answer",
       previous="processing"),
    _e(4, "reminder", role="analyst", terminal_id="a1"),
    _e(7, "status", role="analyst", terminal_id="a1", status="processing",
       previous="waiting_user_answer"),
    _e(9, "answer", role="analyst", terminal_id="a1", chars=40, from_file=True),
    _e(10, "tokens", role="analyst", round=1, input_tokens=1000, output_tokens=50,
       cached_input_tokens=200, cost_usd=0.01, model="m1"),
    _e(11, "tokens", role="analyst", round=1, input_tokens=True, output_tokens=-0.5,
       cost_usd="free", model=3),
    _e(12, "gate", role="analyst_review", approved=True),
    _e(13, "verdict", round=1, verdict="FAIL"),
    _e(14, "prompt_sent", role="tester", terminal_id="e5", round=2, phase="tester", cycle=1),
    {"event": 5},
    _e(15, "mystery", role="nobody"),
]  # fmt: skip


def _record() -> Any:
    state = RunState(terminals={"analyst": "a1", "tester": "e5"}, provider="claude_code")
    return fold_events(state, Path("/s.json"), EVENTS)


def test_turns_waits_reminders_and_sizes() -> None:
    record = _record()
    first, second = record.turns
    assert (first.role.output_key, first.round, first.prompt_chars, first.answer_chars) == (
        "analyst",
        1,
        100,
        40,
    )
    assert first.seconds() == 8.0
    assert [(b.second, e.second if e else None) for b, e in first.waits] == [(3, 7)]
    assert [moment.second for moment in first.reminders] == [4]
    assert second.answered_at is None  # still working
    assert record.git_head == "abc123"


def test_tokens_ignore_fields_of_the_wrong_type() -> None:
    usage = _record().tokens_for_role("analyst")
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (1000, 50, 200)
    assert usage.cost_usd == pytest.approx(0.01)
    assert usage.models == {"m1"}


def test_agent_rows_take_provider_status_and_verdicts_from_the_record() -> None:
    rows = {row.role.terminal_key: row for row in _record().agent_rows()}
    assert rows["analyst"].provider == "codex"
    assert rows["tester"].provider == "claude_code"  # a bad provider entry falls back
    assert rows["analyst"].status == "processing"
    assert rows["peer_analyst"].last_verdict == "APPROVED"
    assert rows["tester"].last_verdict == "FAIL"
    assert rows["programmer"].last_verdict == "-"


def test_timeline_places_bars_in_lanes_and_marks_waits() -> None:
    timeline = layout_timeline(_record())
    assert len(timeline.bars) == 2
    analyst, tester = timeline.bars
    assert analyst.y < tester.y
    assert analyst.x < tester.x and not analyst.open and tester.open
    assert len(analyst.waits) == 1 and "waited 4s" in analyst.waits[0].title
    assert [label for _, label in timeline.rounds] == ["round 1", "round 2"]


def test_role_names_and_hostile_screen_text() -> None:
    assert role_from_name("peer-analyst").output_key == "analyst_review"
    assert role_from_name("programmer_review").terminal_key == "peer_programmer"
    assert role_from_name("peer programmer").terminal_key == "peer_programmer"
    assert role_from_name("boss") is None
    assert printable("ok\x1b]52;c;ZXZpbA==\x07 \x9bdone\ttab") == "ok]52;c;ZXZpbA== done    tab"
    line = describe_event(EVENTS[3])
    assert "status analyst" in line and "processing → waiting_user_answer" in line


def test_watch_keys_pick_agents_and_quit() -> None:
    watcher = Watcher(state_path=Path("/s.json"), probe=None)
    assert watcher.handle_key("4") and watcher.selected == 3
    assert watcher.handle_key("\t") and watcher.selected == 4
    assert watcher.handle_key("\t") and watcher.selected == 0
    assert watcher.handle_key("\x1b[Z") and watcher.selected == 4
    assert watcher.handle_key("9") and watcher.selected == 4
    assert not watcher.handle_key("q")


@pytest.mark.parametrize("key", ["y", "1", "Enter", "Escape", "C-c", "M-Up", "F5", "é"])
def test_keys_a_dialog_wants_are_accepted(key: str) -> None:
    assert validate_key(key) == key


@pytest.mark.parametrize(
    "key",
    ["send-keys", "yes", "C-", "\n", "kill-server", "Enter;ls", "C-a\n", "Enter\n", ";", "C-;"],
)
def test_anything_else_is_refused(key: str) -> None:
    with pytest.raises(BadRequestError, match="is not a single character"):
        validate_key(key)


def test_attach_to_a_remote_server_is_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from baton.cli import cli
    from baton.hints import baton_command
    from baton.orchestrator.state import save_state

    state_path = tmp_path / "state.json"
    save_state(
        RunState(api="http://build-box.internal:9889", terminals={"tester": "e5e5e5e5"}), state_path
    )
    result = CliRunner().invoke(cli, ["attach", "tester", "--state-file", str(state_path)])
    watch = baton_command("watch", state_path)  # the state file named, from any directory
    assert result.exit_code == 1
    assert result.output.strip() == (
        "baton: error: the server http://build-box.internal:9889 is on another machine; "
        f"attach on that machine, or follow the agents here with `{watch}`"
    )
    result = CliRunner().invoke(cli, ["attach", "analyst", "--state-file", str(state_path)])
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == f"baton: error: the run in {state_path} has no terminal for analyst"
    )
