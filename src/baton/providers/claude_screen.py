"""Reading Claude Code's screen: pure functions of the text `tmux capture-pane -p` prints.

Claude Code 2.x draws, from the top: the transcript (the user's prompts at column 0 after
`❯`, answers and tool calls after a `●` bullet with their continuation lines indented,
`✻ <verb> for 9s · done …` when a turn ends), then a spinner line while it works, then
the input box between two full-width `─` rules, then a footer row that carries
`esc to interrupt` for as long as a turn runs. A dialog (workspace trust, permission
question, mode warning) replaces the input box.

Only lines at column 0 of the transcript are read as markers: everything the model wrote
is indented under its bullet, so an answer full of words like "running" or "working"
can never look like work. The busy hint is read from the footer and the spinner line
only, never from the transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = ["ClaudeScreen", "Marker", "last_answer", "parse_screen", "screen_status"]

_PROMPT_GLYPHS = ("❯", ">")
_BULLETS = ("●", "⏺")
_SPINNER_GLYPHS = "·*✶✽✻✢✳∗⋆"
_BUSY_HINT = "esc to interrupt"
# `✻ Cooked for 9s · done 2:05 AM`, `✻ Worked for 1m 3s`: the turn is over.
_DONE = re.compile(rf"^[{_SPINNER_GLYPHS}] \S+ for \d+[hms](?: \d+[ms])*\b")
# `✢ Transfiguring… (5s · ↓ 20 tokens)`, `✻ 500 … · retrying in 1s · attempt 1/1`.
_SPINNER = re.compile(rf"^[{_SPINNER_GLYPHS}] \S.*(?:…|\.\.\.|retrying in )")
_API_ERROR = re.compile(r"^(?:[●⏺]|\s*⎿)\s+(?:API Error\b|Error: )")
_INTERRUPTED = re.compile(r"^\s*⎿\s+Interrupted\b")
_TOOL_OUTPUT = re.compile(r"^\s+⎿")
# Dialog cues, looked for only where the input box would be.
_DIALOG_CUES = (
    "Esc to cancel",
    "Enter to confirm",
    "Enter to select",
    "Do you want to proceed?",
    "Do you want to make this edit",
    "Do you want to create",
    "Yes, I trust this folder",
    "Yes, I accept",
)
_OPTION = re.compile(r"^\s{1,4}❯ \S")
_RIGHT_ALIGNED = 40  # lines indented this far are hints drawn at the right edge


class Marker(StrEnum):
    """The latest thing that happened in the transcript, read bottom-up."""

    NONE = "none"  # nothing since the banner: a fresh session
    PROMPT = "prompt"  # a prompt was submitted, nothing answered yet
    WORKING = "working"  # spinner line or a tool call still open
    DONE = "done"  # the turn's closing line (or an answer with nothing after it)
    ERROR = "error"  # `API Error: …` ended the turn
    INTERRUPTED = "interrupted"  # the user stopped the turn


@dataclass(frozen=True)
class ClaudeScreen:
    """A screen split into its parts; `box` is None while a dialog replaces the input box."""

    transcript: list[str]
    box: list[str] | None
    footer: list[str]

    @property
    def busy(self) -> bool:
        """The footer (or the spinner line right above the box) says a turn is running."""
        spinner = [line for line in self.transcript[-8:] if _SPINNER.match(line)]
        return any(_BUSY_HINT in line.lower() for line in [*self.footer, *spinner])

    @property
    def dialog(self) -> bool:
        """A question waits for the user where the input box would be."""
        if self.box is not None:
            return False
        region = self.footer or self.transcript[-25:]
        if any(cue in line for line in region for cue in _DIALOG_CUES):
            return True
        return sum(1 for line in region if _OPTION.match(line)) == 1 and len(region) > 2

    def marker(self) -> Marker:
        """The latest transcript marker, skipping furniture (hints, tips, blank lines)."""
        lines = self.transcript
        for index in range(len(lines) - 1, -1, -1):
            line = lines[index]
            if not line.strip() or _is_right_aligned(line):
                continue
            if _INTERRUPTED.match(line):
                return Marker.INTERRUPTED
            if _API_ERROR.match(line):
                return Marker.ERROR
            if _DONE.match(line):
                return Marker.DONE
            if _SPINNER.match(line):
                return Marker.WORKING
            if _is_prompt(line):
                return Marker.PROMPT
            if line.startswith(_BULLETS):
                following = lines[index + 1] if index + 1 < len(lines) else ""
                return Marker.WORKING if _TOOL_OUTPUT.match(following) else Marker.DONE
        return Marker.NONE


def parse_screen(screen: str) -> ClaudeScreen:
    """Split a captured screen (or scrollback) into transcript, input box and footer."""
    lines = normalize_screen(screen).split("\n")
    rules = [index for index, line in enumerate(lines) if _is_rule(line)]
    if len(rules) >= 2:
        top, bottom = rules[-2], rules[-1]
        if bottom > top + 1 and lines[top + 1].startswith(_PROMPT_GLYPHS):
            return ClaudeScreen(lines[:top], lines[top + 1 : bottom], lines[bottom + 1 :])
    if rules:
        # A dialog: everything under the last rule is the dialog itself.
        return ClaudeScreen(lines[: rules[-1]], None, lines[rules[-1] + 1 :])
    return ClaudeScreen(lines, None, [])


def screen_status(screen: str) -> TerminalStatus:
    """The status a person would read from this screen alone."""
    parsed = parse_screen(screen)
    if parsed.box is None:
        return TerminalStatus.WAITING_USER_ANSWER if parsed.dialog else TerminalStatus.PROCESSING
    marker = parsed.marker()
    if parsed.busy or marker in (Marker.WORKING, Marker.PROMPT):
        return TerminalStatus.PROCESSING
    if marker is Marker.ERROR:
        return TerminalStatus.ERROR
    if marker is Marker.DONE:
        return TerminalStatus.COMPLETED
    return TerminalStatus.IDLE


def last_answer(history: str) -> str:
    """The text of the last answer bullet after the latest prompt, indentation removed."""
    parsed = parse_screen(history)
    lines = parsed.transcript
    prompts = [index for index, line in enumerate(lines) if _is_prompt(line)]
    start = prompts[-1] + 1 if prompts else 0
    answer: list[str] | None = None
    index = start
    while index < len(lines):
        line = lines[index]
        if line.startswith(_BULLETS):
            block = _block(lines, index)
            following = lines[index + len(block)] if index + len(block) < len(lines) else ""
            is_tool = (len(block) > 1 and _TOOL_OUTPUT.match(block[1])) or (
                len(block) == 1 and _TOOL_OUTPUT.match(following)
            )
            if not is_tool:
                answer = block
            index += len(block)
            continue
        index += 1
    if answer is None:
        return ""
    text = [answer[0][2:]] + [line[2:] if line.startswith("  ") else line for line in answer[1:]]
    return "\n".join(text).strip("\n")


def _block(lines: list[str], start: int) -> list[str]:
    """A bullet line and its continuation (blank or indented lines, hints excluded)."""
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if line.strip() and (not line.startswith(" ") or _is_right_aligned(line)):
            break
        block.append(line)
    while len(block) > 1 and not block[-1].strip():
        block.pop()
    return block


def _is_rule(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 10 and set(stripped) == {"─"}


def _is_prompt(line: str) -> bool:
    """A submitted prompt in the transcript: the prompt glyph at column 0."""
    return any(line == glyph or line.startswith(glyph + " ") for glyph in _PROMPT_GLYPHS) or (
        line.startswith("❯\u00a0")
    )


def _is_right_aligned(line: str) -> bool:
    return len(line) - len(line.lstrip(" ")) >= _RIGHT_ALIGNED
