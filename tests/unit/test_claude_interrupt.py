"""Claude Code reports no end for an interrupted turn: the interrupt record baton serve
writes lets the screen decide again (and only for a turn the hooks hold open)."""

from __future__ import annotations

import json
from pathlib import Path

from baton.providers.base import AgentProfile, TerminalContext
from baton.providers.claude_code import HOOK_LOG_FILE, ClaudeCodeProvider
from baton.providers.claude_hooks import INTERRUPT_EVENT, HookLog, TurnState
from baton.status import TerminalStatus

IDLE = Path(__file__).resolve().parents[1] / "fixtures/screens/claude_code/turn1--idle.txt"


def _context(tmp_path: Path) -> TerminalContext:
    (tmp_path / "runtime").mkdir()
    return TerminalContext(
        terminal_id="abcd1234",
        working_directory=tmp_path,
        profile=AgentProfile(name="analyst", description="", instructions="x"),
        runtime_dir=tmp_path / "runtime",
        env={"HOME": str(tmp_path)},
    )


def _hook(ctx: TerminalContext, name: str) -> None:
    with (ctx.runtime_dir / HOOK_LOG_FILE).open("a") as log:
        log.write(json.dumps({"hook_event_name": name}) + "\n")


def test_an_open_turn_interrupted_follows_the_screen_again(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    provider = ClaudeCodeProvider()
    screen = IDLE.read_text(encoding="utf-8")
    _hook(ctx, "UserPromptSubmit")
    # The prompt was put back and the spinner is gone, but the hooks hold the turn open.
    assert provider.status(screen, ctx) is TerminalStatus.PROCESSING
    provider.interrupted(ctx)
    assert HookLog(ctx.runtime_dir / HOOK_LOG_FILE).turn_state() is TurnState.INTERRUPTED
    assert provider.status(screen, ctx) is TerminalStatus.IDLE
    _hook(ctx, "UserPromptSubmit")  # the prompt sent again opens a new turn
    assert provider.status(screen, ctx) is TerminalStatus.PROCESSING


def test_an_interrupt_key_on_a_finished_turn_records_nothing(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    _hook(ctx, "UserPromptSubmit")
    _hook(ctx, "Stop")
    ClaudeCodeProvider().interrupted(ctx)
    log = (ctx.runtime_dir / HOOK_LOG_FILE).read_text()
    assert INTERRUPT_EVENT not in log
