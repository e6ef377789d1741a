"""Each terminal's hook log reader, set aside when its CLI is resumed."""

from __future__ import annotations

from pathlib import Path

from baton.providers.base import AgentProfile, TerminalContext
from baton.providers.hook_logs import HookLogs
from baton.providers.turn_hooks import HookLog, TurnState


def _context(runtime_dir: Path) -> TerminalContext:
    profile = AgentProfile(name="tester", description="", instructions="")
    return TerminalContext("t1", runtime_dir, profile, runtime_dir, env={})


def test_one_reader_per_terminal_kept_across_reads(tmp_path: Path) -> None:
    logs = HookLogs("hooks.jsonl", HookLog)
    first, second = _context(tmp_path / "a"), _context(tmp_path / "b")
    assert logs.of(first) is logs.of(first)
    assert logs.of(first) is not logs.of(second)
    assert logs.of(first).path == tmp_path / "a" / "hooks.jsonl"


def test_a_resumed_clis_log_starts_empty_and_the_dead_ones_is_kept(tmp_path: Path) -> None:
    logs = HookLogs("hooks.jsonl", HookLog)
    ctx = _context(tmp_path)
    log_file = tmp_path / "hooks.jsonl"
    log_file.write_text('{"hook_event_name": "UserPromptSubmit", "prompt": "x"}\n')
    assert logs.of(ctx).turn_state() is TurnState.OPEN  # the dead CLI left its turn open
    logs.set_aside(ctx)
    logs.mark_resumed(ctx)
    assert not log_file.exists()
    kept = list(tmp_path.glob("hooks.*.jsonl"))
    assert len(kept) == 1 and "UserPromptSubmit" in kept[0].read_text()
    assert logs.of(ctx).turn_state() is TurnState.UNKNOWN  # a fresh reader, nothing open
    assert logs.resumed(ctx)
    logs.launched_fresh(ctx)
    assert not logs.resumed(ctx)


def test_setting_aside_without_a_resume_clears_the_resumed_mark(tmp_path: Path) -> None:
    logs = HookLogs("hooks.jsonl", HookLog)
    ctx = _context(tmp_path)
    logs.mark_resumed(ctx)
    logs.set_aside(ctx)  # no log file yet: nothing to move
    assert not logs.resumed(ctx)
