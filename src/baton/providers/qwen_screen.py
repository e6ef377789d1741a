"""Qwen Code 0.24's screen, read as pure functions of `tmux capture-pane -p` text.

The CLI draws its transcript, the status row (the spinner while a turn runs:
`.. Spinning up… (1s · ↑ 13 tokens · esc to cancel)`), the input box between two rules
(`*   Type your message or @path/to/file`, `*` at column 0) and the footer (the project
and model, then `Enter to steer · Ctrl+Q to queue` while a turn runs, else the mode).
Transcript markers start at column 2, and text under a marker is indented 4, so an
answer can never draw a marker of its own:

      > the user's prompt          (continuation lines indented 4)
      ✓ Shell …                    a tool call (`.` while it runs)
      ◆︎ an answer
      ✕ [API Error: …]             a failed request
      ●︎ Request cancelled.         the user pressed Esc

A scrollbar may be drawn in the last column (`│`, `█`); it is cut from every line. A
dialog (tool approval, folder trust) replaces the input box.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.providers.boxed_screen import DialogCues, boxed_status
from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = [
    "WORKING_INDICATOR",
    "QwenScreen",
    "detect_status",
    "extract_last_message",
    "input_pending",
    "parse_screen",
]

_PLACEHOLDER = "Type your message or @path/to/file"
_INPUT_BOX = re.compile(r"^[*>!] {1,3}\S")
_BUSY = re.compile(r"esc to cancel\)")
_STEER = "Enter to steer"
WORKING_INDICATOR = re.compile(r"^ +\S{1,3} +.*\((?:[0-9hms ]+ · )?.*esc to cancel\)")
_SCROLLBAR = re.compile(r"\s+[│█▐▌┃]$")
_PROMPT = re.compile(r"^  > ")
_ANSWER = re.compile(r"^  ◆\ufe0e? ")
_ERROR = re.compile(r"^  ✕ ")
_CANCELLED = re.compile(r"^  ●\ufe0e? Request cancelled\.")
_DIALOG_TEXT = (
    "Apply this change?",
    "Allow execution of",
    "Do you want to proceed?",
    "Do you trust this folder?",
)
_OPTION = re.compile(r"^[│ ]*[●›❯] ?\d\. ")
_DIALOG = DialogCues(_DIALOG_TEXT, _OPTION, text_lines=30, option_lines=20)


@dataclass(frozen=True)
class QwenScreen:
    transcript: list[str]
    status_row: str
    footer: list[str]
    has_input: bool

    @property
    def busy(self) -> bool:
        return bool(_BUSY.search(self.status_row)) or any(_STEER in line for line in self.footer)

    def turn(self) -> list[str]:
        starts = [i for i, line in enumerate(self.transcript) if _PROMPT.match(line)]
        return self.transcript[starts[-1] :] if starts else list(self.transcript)

    def last_marker(self) -> str | None:
        """The latest marker of the current turn: `answer`, `error`, `cancelled`, else
        `prompt` (a prompt with nothing after it but tool calls), None without a prompt."""
        for line in reversed(self.turn()):
            if _ANSWER.match(line):
                return "answer"
            if _ERROR.match(line):
                return "error"
            if _CANCELLED.match(line):
                return "cancelled"
            if _PROMPT.match(line):
                return "cancelled" if self._cancelled_before(line) else "prompt"
        return None

    def _cancelled_before(self, prompt: str) -> bool:
        """A prompt Esc cancelled before any reply may be drawn after its own
        `Request cancelled.` line: that line right above the latest prompt."""
        index = max(i for i, line in enumerate(self.transcript) if line == prompt)
        above = [line for line in self.transcript[:index] if line.strip()]
        return bool(above) and bool(_CANCELLED.match(above[-1]))


def _lines(screen: str) -> list[str]:
    return [_SCROLLBAR.sub("", line) for line in normalize_screen(screen).split("\n")]


def _is_rule(line: str) -> bool:
    return line.startswith("───")


def _box(lines: list[str]) -> tuple[int, int] | None:
    """The input box: its first line (right under a rule, `* ` at column 0) and the rule
    that closes it; the lowest such box on the screen. None when no box is drawn."""
    for index in range(len(lines) - 1, 0, -1):
        if _is_rule(lines[index - 1]) and _INPUT_BOX.match(lines[index]):
            close = next(
                (i for i in range(index + 1, len(lines)) if _is_rule(lines[i])), len(lines)
            )
            return index, close
    return None


def parse_screen(screen: str) -> QwenScreen:
    """Cut `screen` at the input box: above its rule the transcript, below it the footer."""
    lines = _lines(screen)
    box = _box(lines)
    if box is None:
        return QwenScreen(transcript=lines, status_row="", footer=[], has_input=False)
    first, close = box
    rule = first - 1
    status_row = ""
    end = rule
    if rule > 0 and WORKING_INDICATOR.match(lines[rule - 1]):
        status_row, end = lines[rule - 1], rule - 1
    transcript = lines[:end]
    while transcript and not transcript[-1].strip():
        transcript.pop()
    return QwenScreen(transcript, status_row, lines[close + 1 :], True)


def input_pending(screen: str) -> bool:
    """Whether the input box holds typed text (not its placeholder) on `screen`."""
    lines = _lines(screen)
    box = _box(lines)
    if box is None:
        return False
    first, close = box
    typed = [line for line in lines[first:close] if line.strip()]
    return not (len(typed) == 1 and typed[0].startswith(f"*   {_PLACEHOLDER}"))


def detect_status(screen: str) -> TerminalStatus:
    """The status the screen shows (the rule shared with the other boxed CLIs)."""
    return boxed_status(parse_screen(screen), _DIALOG)


def extract_last_message(history: str) -> str:
    parsed = parse_screen(history)
    turn = parsed.turn()
    starts = [i for i, line in enumerate(turn) if _ANSWER.match(line) or _ERROR.match(line)]
    if not starts:
        return ""
    first = turn[starts[-1]]
    if _ERROR.match(first):
        return _ERROR.sub("", first).strip()
    block = [_ANSWER.sub("", first)]
    for line in turn[starts[-1] + 1 :]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip("\n")
