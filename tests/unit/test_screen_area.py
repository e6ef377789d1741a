"""The agent panel's text: recorded Codex, Claude Code and OpenCode screens without their
furniture."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.cockpit.screen_area import working_area

SCREENS = Path(__file__).parents[1] / "fixtures" / "screens"
FURNITURE = (
    "? for shortcuts",
    "gpt-5.1-codex",
    "Ask Codex to do anything",
    "bypass permissions on",
    "for agents",
    "/effort",
    "Build auto · Baton scripted OpenAI",
    "esc interrupt",
    "LSPs are disabled",
)


@pytest.mark.parametrize(
    ("fixture", "provider", "last"),
    [
        ("codex/tool_turn-05.txt", "codex", "1. Per-file artifact re"),
        ("codex/narrative-05.txt", "codex", "Worked for 1s • 02:15"),
        ("claude_code/turn1--completed.txt", "claude_code", "✻ Churned for 4s · done 2:17 AM"),
        (
            "claude_code/turn1-middle--processing.txt",
            "claude_code",
            "✶ Razzmatazzing… (2s · ↓ 8 tokens)",
        ),
        ("opencode/turn1--completed.txt", "opencode", "▣  Build · Baton scripted · 12.3s"),
        ("opencode/turn1-first--processing.txt", "opencode", "▣  Build · Baton scripted"),
    ],
)
def test_the_panel_ends_with_the_work_not_the_footer(
    fixture: str, provider: str, last: str
) -> None:
    area = working_area((SCREENS / fixture).read_text(), provider, 8).splitlines()
    assert len(area) <= 8
    assert area[-1].strip() == last
    assert not any(f in line for line in area for f in FURNITURE), area
    assert all(area[i].strip() or area[i - 1].strip() for i in range(1, len(area)))  # folded


def test_a_dialog_is_kept_whole() -> None:
    screen = (SCREENS / "claude_code/permission-bash--waiting_user_answer.txt").read_text()
    area = working_area(screen, "claude_code", 6)
    assert "Do you want to proceed?" in area and "Esc to cancel · Tab to amend" in area
    codex = (SCREENS / "codex/approval-03.txt").read_text()
    assert working_area(codex, "codex", 3).splitlines()[-1].startswith("◦ Working")


def test_the_scripted_prompt_is_furniture_too() -> None:
    assert (
        working_area("• done\n─ Worked for 1s ─\n\n›\n\n", "scripted", 5)
        == "• done\n─ Worked for 1s ─"
    )
