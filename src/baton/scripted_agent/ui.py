"""What the scripted agent draws, shared with the provider that reads its screen.

Keeping the strings in one place means the program and `ScriptedProvider.detect_status`
cannot drift apart.
"""

from __future__ import annotations

import re

__all__ = [
    "ANSWER_BULLET",
    "ANSWER_INDENT",
    "DONE_LINE",
    "DONE_PATTERN",
    "ERROR_PREFIX",
    "INTERRUPTED_LINE",
    "PERMISSION_QUESTION",
    "PROMPT",
    "SPINNER_FRAMES",
    "TRUST_QUESTION",
    "WORKING_PATTERN",
    "done_line",
    "working_line",
]

PROMPT = "›"
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ANSWER_BULLET = "• "
ANSWER_INDENT = "  "
ERROR_PREFIX = "✗ Error: "
# Shown when Esc interrupts a hanging turn (BATON_SCRIPTED_HANG); the prompt follows (idle).
INTERRUPTED_LINE = "■ Interrupted"
DONE_LINE = "─ Worked for {seconds}s ─"
TRUST_QUESTION = "Do you trust the files in this folder? [y/n]"
# Asked mid-turn when BATON_SCRIPTED_ASK_BEFORE_WORK names the role (a permission dialog).
PERMISSION_QUESTION = "Allow the scripted agent to start this work? [y/n]"

WORKING_PATTERN = re.compile(rf"^[{SPINNER_FRAMES}] Working \(\d+s · esc to interrupt\)$")
DONE_PATTERN = re.compile(r"^─ Worked for \d+s ─$")


def working_line(frame: int, seconds: int) -> str:
    return f"{SPINNER_FRAMES[frame % len(SPINNER_FRAMES)]} Working ({seconds}s · esc to interrupt)"


def done_line(seconds: int) -> str:
    return DONE_LINE.format(seconds=seconds)
