"""Gemini CLI 0.61's screen, read as pure functions of `tmux capture-pane -p` text.

The CLI draws its transcript, then a status row ending in `? for shortcuts` (with the
spinner on its left while a turn runs: `⠇ Thinking... (esc to cancel, 3s)`), a rule,
the mode row, the input box (`*   Type your message or @path/to/file`) and the footer
(workspace, sandbox, model). Transcript markers all start at column 0 or 1, and text
under a marker is indented, so an answer can never draw a marker of its own:

    > the user's prompt          (one space, `>`; continuation lines indented 3)
   ✦  an answer                  (continuation lines indented 2)
   ✕ [API Error: …]              a failed request
   ℹ Request cancelled.          the user pressed Esc
   ╭─ … ─╮                       a tool call's box (`✓  Shell …` inside)

A dialog (tool approval, authentication, folder trust) replaces the input box.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = [
    "WORKING_INDICATOR",
    "GeminiScreen",
    "detect_status",
    "extract_last_message",
    "input_pending",
    "parse_screen",
]

_INPUT_BOX = re.compile(r"^ [*>!] {1,3}\S|^ [*>!] {3}Type your message")
_PLACEHOLDER = "Type your message or @path/to/file"
_SHORTCUTS = "? for shortcuts"
_BUSY = re.compile(r"\(esc to cancel, [0-9hms ]+\)")
# The spinner row while a turn runs: a braille spinner, a verb or a witty phrase, a timer.
WORKING_INDICATOR = re.compile(r"^ ?[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⠁⠂⠄⡀⢀⠠⠐⠈]? ?.*\(esc to cancel, [0-9hms ]+\)")
_PROMPT = re.compile(r"^ > ")
_ANSWER = "✦ "
_ERROR = "✕ "
_CANCELLED = "ℹ Request cancelled."
_DIALOG_TEXT = (
    "Apply this change?",
    "Allow execution of",
    "Do you want to proceed?",
    "How would you like to authenticate",
    "Do you trust the files in this folder?",
    "Do you trust this folder?",
)
# A dialog's selected option: a radio dot before a numbered choice (`● 1. Allow once`).
_OPTION = re.compile(r"^[│ ]*● ?\d\. ")


@dataclass(frozen=True)
class GeminiScreen:
    """One screen cut into its parts: transcript, status row, and whether a box is drawn."""

    transcript: list[str]
    status_row: str
    has_input: bool

    @property
    def busy(self) -> bool:
        return bool(_BUSY.search(self.status_row))

    def turn(self) -> list[str]:
        """The transcript lines from the latest prompt on (all of it when none is shown)."""
        starts = [i for i, line in enumerate(self.transcript) if _PROMPT.match(line)]
        return self.transcript[starts[-1] :] if starts else list(self.transcript)

    def last_marker(self) -> str | None:
        """The latest column-0 marker of the current turn (`✦`, `✕`, `ℹ`), if any."""
        for line in reversed(self.turn()):
            if line.startswith(_ANSWER):
                return _ANSWER
            if line.startswith(_ERROR):
                return _ERROR
            if line.startswith(_CANCELLED):
                return _CANCELLED
            if line.startswith(("╭", "╰", "│")):
                return "tool"
        return None


def parse_screen(screen: str) -> GeminiScreen:
    """Cut `screen` at the input box: what is above its rule is the transcript."""
    lines = normalize_screen(screen).split("\n")
    rows = range(len(lines) - 1, -1, -1)
    box = next((i for i in rows if _PLACEHOLDER in lines[i] or _is_input(lines, i)), None)
    if box is None:
        return GeminiScreen(transcript=lines, status_row="", has_input=False)
    rule = next((i for i in range(box - 1, -1, -1) if lines[i].startswith("───")), box)
    row = next((i for i in range(rule - 1, max(rule - 4, -1), -1) if _SHORTCUTS in lines[i]), None)
    if row is None:
        # A status row without the shortcuts hint (a narrow pane): the line above the rule.
        row = rule - 1 if rule > 0 and lines[rule - 1].strip() else rule
    status_row = lines[row] if 0 <= row < rule else ""
    transcript = lines[: row if 0 <= row < rule else rule]
    while transcript and not transcript[-1].strip():
        transcript.pop()
    return GeminiScreen(transcript=transcript, status_row=status_row, has_input=True)


def _is_input(lines: list[str], index: int) -> bool:
    """An input box line right under the mode row that follows a rule."""
    if not _INPUT_BOX.match(lines[index]):
        return False
    above = [i for i in range(max(index - 3, 0), index) if lines[i].startswith("───")]
    return bool(above)


def input_pending(screen: str) -> bool:
    """Whether the input box holds typed text (not its placeholder) on `screen`."""
    lines = normalize_screen(screen).split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if _PLACEHOLDER in lines[index]:
            return False
        if _is_input(lines, index):
            return True
    return False


def detect_status(screen: str) -> TerminalStatus:
    """The status the screen shows (see the module docstring for the layout)."""
    parsed = parse_screen(screen)
    if not parsed.has_input:
        tail = "\n".join(parsed.transcript[-30:])
        if any(text in tail for text in _DIALOG_TEXT) or any(
            _OPTION.match(line) for line in parsed.transcript[-20:]
        ):
            return TerminalStatus.WAITING_USER_ANSWER
        return TerminalStatus.PROCESSING  # starting, or a redraw in progress
    if parsed.busy:
        return TerminalStatus.PROCESSING
    marker = parsed.last_marker()
    has_prompt = any(_PROMPT.match(line) for line in parsed.transcript)
    if marker == _ERROR:
        return TerminalStatus.ERROR
    if marker == _ANSWER:
        return TerminalStatus.COMPLETED
    if marker == _CANCELLED or not has_prompt:
        return TerminalStatus.IDLE
    # A prompt with a tool box or nothing after it, and no spinner: between two steps.
    return TerminalStatus.PROCESSING


def extract_last_message(history: str) -> str:
    """The latest answer block (`✦` and its indented lines), or the latest error line."""
    parsed = parse_screen(history)
    turn = parsed.turn()
    starts = [i for i, line in enumerate(turn) if line.startswith((_ANSWER, _ERROR))]
    if not starts:
        return ""
    start = starts[-1]
    first = turn[start]
    if first.startswith(_ERROR):
        return first[len(_ERROR) :].strip()
    block = [first[len(_ANSWER) :].lstrip(" ")]
    for line in turn[start + 1 :]:
        if line and not line.startswith("  "):
            break
        block.append(line[2:])
    return "\n".join(block).strip("\n")
