"""Copilot CLI 1.0's screen, read as pure functions of `tmux capture-pane -p` text.

The CLI draws a full-screen view: the transcript, the working directory on one line, the
input box between two rules (`❯ ` at column 0, continuation lines indented 2) and the
footer (`← open sidebar · Interactive · …` at rest, `◉ Working · 1.1 KiB esc esc
interrupt` while a turn runs). Transcript markers start at column 1 and the text under
a marker is indented 3, so an answer can never draw a marker of its own:

     ❯ the user's prompt                                   08:00
       continuation lines
     $ Shell <description>                                 a shell tool call
     ● an answer                                           (also: notes, below)
     ✗ 400 <error>                                         a failed turn
     ● Operation cancelled by user                         the user interrupted it
     ! Model "…" is not in the built-in catalog…           a warning

`●` also starts notes that are neither answers nor ends: `● Tip: …`, `● Request failed
due to a transient API error. Retrying...`, and the tool notices a CLI started with
`--excluded-tools` prints under the first prompt before it answers (`● Disabled tools:
…`, `● Unknown tool name in the tool excludedlist: …`). A scrollbar may be drawn in the
last column (`┃`); it is cut from every line. A dialog (folder trust, a question the
agent asks, a permission) replaces the input box.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.providers.boxed_screen import DialogCues, boxed_status
from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = [
    "WORKING_INDICATOR",
    "CopilotScreen",
    "detect_status",
    "extract_last_message",
    "input_pending",
    "parse_screen",
]

# The footer while a turn runs: a turning glyph, `Working`, what streamed so far.
WORKING_INDICATOR = re.compile(r"^\S Working\b")
_SCROLLBAR = re.compile(r"\s+[┃│█▐▌]$")
_INPUT_BOX = re.compile(r"^❯(?: |$)")
_MARKER = re.compile(r"^ (\S) ")
_PROMPT = "❯"
_ANSWER = "●"
_ERROR = "✗"
_CANCELLED = re.compile(r"^ ● Operation cancelled by user")
_NOTE = re.compile(
    r"^ ● (?:Tip: |Request failed due to a transient API error|Disabled tools: "
    r"|Unknown tool name in the tool )"
)
_DIALOG_TEXT = (
    "Confirm folder trust",
    "Do you trust the files in this folder?",
    "to navigate · enter to select",
    "Copilot needs information.",
    "select · enter accept",
    "Do you want to",
)
_OPTION = re.compile(r"^[│ ]*[❯›] ?\d\. ")
_DIALOG = DialogCues(_DIALOG_TEXT, _OPTION, text_lines=40, option_lines=25)


@dataclass(frozen=True)
class CopilotScreen:
    transcript: list[str]
    footer: list[str]
    has_input: bool

    @property
    def busy(self) -> bool:
        return bool(self.footer) and bool(WORKING_INDICATOR.match(self.footer[0].strip()))

    def turn(self) -> list[str]:
        starts = [i for i, line in enumerate(self.transcript) if _kind(line) == "prompt"]
        return self.transcript[starts[-1] :] if starts else list(self.transcript)

    def last_marker(self) -> str | None:
        """The latest marker of the current turn: `answer`, `error`, `cancelled`, else
        `prompt` (a prompt with nothing after it but tool calls and notes), None without
        a prompt."""
        for line in reversed(self.turn()):
            kind = _kind(line)
            if kind in ("answer", "error", "cancelled", "prompt"):
                return kind
        return None


def _kind(line: str) -> str | None:
    """What a transcript line starts: a marker's kind, or None for text under one."""
    match = _MARKER.match(line)
    if match is None:
        return None
    glyph = match.group(1)
    if glyph == _PROMPT:
        return "prompt"
    if glyph == _ERROR:
        return "error"
    if glyph == _ANSWER:
        if _CANCELLED.match(line):
            return "cancelled"
        return "note" if _NOTE.match(line) else "answer"
    return "tool" if glyph != "!" else "note"


def _lines(screen: str) -> list[str]:
    return [_SCROLLBAR.sub("", line) for line in normalize_screen(screen).split("\n")]


def _is_rule(line: str) -> bool:
    return line.startswith("───")


def _box(lines: list[str]) -> tuple[int, int] | None:
    """The input box: its first line (right under a rule, `❯` at column 0) and the rule
    that closes it; the lowest such box on the screen. None when no box is drawn."""
    for index in range(len(lines) - 1, 0, -1):
        if _is_rule(lines[index - 1]) and _INPUT_BOX.match(lines[index]):
            close = next(
                (i for i in range(index + 1, len(lines)) if _is_rule(lines[i])), len(lines)
            )
            return index, close
    return None


def parse_screen(screen: str) -> CopilotScreen:
    """Cut `screen` at the input box: above its rule (less the working-directory line)
    the transcript, below its closing rule the footer."""
    lines = _lines(screen)
    box = _box(lines)
    if box is None:
        return CopilotScreen(transcript=lines, footer=[], has_input=False)
    first, close = box
    end = first - 1
    if end > 0 and lines[end - 1].strip():
        end -= 1  # the working directory (and branch) above the input box
    transcript = lines[:end]
    while transcript and not transcript[-1].strip():
        transcript.pop()
    footer = [line for line in lines[close + 1 :] if line.strip()]
    return CopilotScreen(transcript, footer, True)


def input_pending(screen: str) -> bool:
    """Whether the input box holds typed text on `screen`."""
    lines = _lines(screen)
    box = _box(lines)
    if box is None:
        return False
    first, close = box
    typed = [line for line in lines[first:close] if line.strip()]
    return typed != ["❯"]


def detect_status(screen: str) -> TerminalStatus:
    """The status the screen shows (the rule shared with the other boxed CLIs)."""
    return boxed_status(parse_screen(screen), _DIALOG)


def extract_last_message(history: str) -> str:
    """The latest turn's last answer (or error) block, its indentation taken off."""
    turn = parse_screen(history).turn()
    starts = [i for i, line in enumerate(turn) if _kind(line) in ("answer", "error")]
    if not starts:
        return ""
    first = turn[starts[-1]]
    block = [first[3:]]
    for line in turn[starts[-1] + 1 :]:
        if line and not line.startswith("   "):
            break
        block.append(line[3:])
    if _kind(first) == "error":
        return " ".join(part.strip() for part in block if part.strip())
    return "\n".join(block).strip("\n")
