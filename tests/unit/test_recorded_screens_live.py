"""Every recorded screen gives the same status after passing through the screen model.

The recorded screens (tests/fixtures/screens) are what `capture-pane -p` printed. Drawn
into the pane emulator as a CLI would draw them, they must come back unchanged, so the
providers read the same status from memory as from tmux.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.providers.base import Provider
from baton.providers.claude_code import ClaudeCodeProvider
from baton.providers.codex import CodexProvider
from baton.providers.copilot_cli import CopilotCliProvider
from baton.providers.gemini_cli import GeminiCliProvider
from baton.providers.opencode import OpenCodeProvider
from baton.providers.qwen_code import QwenCodeProvider
from baton.screen import normalize_screen
from baton.server.emulator import PaneEmulator

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
RECORDED = sorted(
    path
    for path in SCREENS.glob("*/*.txt")
    if not path.name.endswith(("--history.txt", "--answer.txt"))
)
PROVIDERS: dict[str, Provider] = {
    "codex": CodexProvider(),
    "claude_code": ClaudeCodeProvider(),
    "gemini_cli": GeminiCliProvider(),
    "qwen_code": QwenCodeProvider(),
    "copilot": CopilotCliProvider(),
    "opencode": OpenCodeProvider(),
}


def _drawn(screen: str) -> str:
    lines = screen.split("\n")
    emulator = PaneEmulator(max(200, *(len(line) for line in lines)), max(50, len(lines)))
    # As a CLI draws: colours around some words, lines ended by CR LF.
    data = "\r\n".join(f"\x1b[1m{line[:4]}\x1b[0m{line[4:]}" for line in lines)
    emulator.feed(data.encode("utf-8"))
    return emulator.visible()


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_screen_has_the_same_status_through_the_model(path: Path) -> None:
    recorded = normalize_screen(path.read_text(encoding="utf-8"))
    provider = PROVIDERS[path.parent.name]
    shown = _drawn(recorded)
    assert shown == recorded
    assert provider.detect_status(shown) == provider.detect_status(recorded)


def test_there_are_recorded_screens() -> None:
    assert len(RECORDED) > 40
