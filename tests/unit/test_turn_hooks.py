"""The prompt-and-stop hook log Claude Code and Qwen Code share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton.providers.turn_hooks import HookLog, TurnState


def _write(path: Path, *events: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event) + "\n")


def test_a_prompts_later_model_requests_continue_its_turn(tmp_path: Path) -> None:
    """Qwen Code fires UserPromptSubmit again after each tool result, same prompt_id."""
    path = tmp_path / "hooks.jsonl"
    log = HookLog(path)
    first = {
        "hook_event_name": "UserPromptSubmit",
        "prompt_id": "s########0",
        "session_id": "s1234567",
    }
    _write(path, first, {**first, "prompt": ""})
    assert (log.prompts(), log.turn_state()) == (1, TurnState.OPEN)
    _write(path, {"hook_event_name": "Stop", "prompt_id": "s########0"})
    assert log.turn_state() is TurnState.FINISHED
    _write(path, {"hook_event_name": "UserPromptSubmit", "prompt_id": "s########1"})
    assert (log.prompts(), log.turn_state()) == (2, TurnState.OPEN)
    assert log.session_id() == "s1234567"


def test_prompts_without_ids_each_count(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    _write(path, {"hook_event_name": "UserPromptSubmit"}, {"hook_event_name": "UserPromptSubmit"})
    assert HookLog(path).prompts() == 2


def test_a_stop_hook_that_sends_the_model_back_reopens_the_turn(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    event = {"hook_event_name": "UserPromptSubmit", "prompt_id": "p1"}
    _write(path, event, {"hook_event_name": "Stop"}, event)
    log = HookLog(path)
    assert (log.prompts(), log.turn_state()) == (1, TurnState.OPEN)


def test_a_new_prompt_under_the_ended_turns_prompt_id_counts(tmp_path: Path) -> None:
    """Claude Code can give a prompt typed as a turn ends the ended turn's prompt_id."""
    path = tmp_path / "hooks.jsonl"
    ended = {"hook_event_name": "UserPromptSubmit", "prompt_id": "p4", "prompt": "Message 04"}
    _write(path, ended, {"hook_event_name": "Stop", "prompt_id": "p4"})
    log = HookLog(path)
    assert (log.prompts(), log.turn_state()) == (1, TurnState.FINISHED)
    _write(path, {**ended, "prompt": "Message 03"})
    assert (log.prompts(), log.turn_state()) == (2, TurnState.OPEN)
    _write(path, {"hook_event_name": "Stop", "prompt_id": "p5"})
    assert (log.prompts(), log.turn_state()) == (2, TurnState.FINISHED)
