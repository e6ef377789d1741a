"""OpenCode 1.18's screen, read as pure functions of `tmux capture-pane -p` text.

OpenCode draws a full-screen interface. Before the first prompt it shows its logo over
a centred input box; in a session the transcript fills the left of the screen (a wide
pane adds a sidebar on the right: title, context, cost), above the input box:

      ┃  the user's prompt             a prompt, a tool call or an error: a bar at column 2
         an answer                     the answer's text, indented 5
         ▣  Build · GPT-5.1 · 12.4s    a finished turn's footer (agent, model, duration)
         ▣  Build · GPT-5.1            the turn still running, or failed (the error above)
         ▣  Build · GPT-5.1 · interrupted
      ┃
      ┃  Build auto · GPT-5.1 OpenAI   the box: typed text, then the agent and model
      ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀    its bottom edge, as wide as the transcript
       ⬝⬝⬝■■■⬝⬝  esc interrupt        the status row: a moving bar while a turn runs
                                       (`esc again to interrupt`, `[retrying in 2s …]`)

The footer is drawn at column 5 under every turn's last message; answer text is drawn
as markdown at the same column, so a quoted footer can stand above the real one, never
below it. A question the agent asks replaces the input box with its options.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = [
    "WORKING_INDICATOR",
    "OpenCodeScreen",
    "box_text",
    "detect_status",
    "extract_last_message",
    "parse_screen",
]

_BORDER = re.compile(r"^(\s*)╹▀+")
_BAR = "┃"
# The status row's moving bar while a turn runs, and what may follow it.
WORKING_INDICATOR = re.compile(r"^\s*[⬝■]{6,}(?:\s|$)")
_FOOTER = re.compile(r"^ {3,6}▣ {1,2}(?P<agent>[^·]+?) · (?P<rest>.+?)\s*$")
_DURATION = re.compile(r"\d+(?:\.\d+)?(?:ms|[smhd])(?: ?\d+(?:\.\d+)?[smh])*")
_PLACEHOLDER = "Ask anything"
# A dialog drawn in place of the input box, in the bar at column 2: a permission request
# (`△ Permission required` … `Allow once   Allow always   Reject`) or a question the
# agent asks (numbered options, `3. Type your own answer`, `enter submit  esc dismiss`).
_DIALOG = re.compile(
    r"^  ┃ +(?:△ Permission required|Allow once +Allow always|\d+\. Type your own answer"
    r"|↑↓ select +enter submit)"
)
_END_INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class OpenCodeScreen:
    """One screen cut into its parts: transcript, input box and status row."""

    transcript: list[str]
    box: list[str]
    status_row: str
    has_input: bool
    # The column of the bar that marks prompts, tool calls and errors (the box's own).
    bar_column: int = 2

    def is_bar(self, line: str) -> bool:
        """Whether `line` is part of a prompt, tool call or error (the bar at its column)."""
        column = self.bar_column
        return line[column : column + 1] == _BAR and not line[:column].strip()

    @property
    def busy(self) -> bool:
        return bool(WORKING_INDICATOR.match(self.status_row))

    @property
    def home(self) -> bool:
        """The screen before the first prompt: the logo over the box, no transcript."""
        return any(_PLACEHOLDER in line for line in self.box) and not self.footers()

    def footers(self) -> list[tuple[int, str, str]]:
        """Every turn footer of the transcript: (line, agent, what follows the model)."""
        found = []
        for index, line in enumerate(self.transcript):
            match = _FOOTER.match(line)
            if match:
                found.append((index, match.group("agent"), match.group("rest")))
        return found

    def last_end(self) -> str | None:
        """How the latest turn's footer ends: `completed`, `interrupted`, `open`; None
        when no footer shows, or a prompt was sent after it (nothing of its answer yet)."""
        footers = self.footers()
        if not footers:
            return None
        index, _, rest = footers[-1]
        if any(self.is_bar(line) for line in self.transcript[index + 1 :]):
            return None
        parts = [part.strip() for part in rest.split(" · ")]
        if parts[-1] == _END_INTERRUPTED:
            return "interrupted"
        if len(parts) >= 2 and _DURATION.fullmatch(parts[-1]):
            return "completed"
        return "open"


def parse_screen(screen: str) -> OpenCodeScreen:
    """Cut `screen` at the input box's bottom edge; lines are cut to the transcript's width."""
    lines = normalize_screen(screen).split("\n")
    edge = next((i for i in range(len(lines) - 1, -1, -1) if _BORDER.match(lines[i])), None)
    if edge is None:
        return OpenCodeScreen(transcript=lines, box=[], status_row="", has_input=False)
    indent = len(_BORDER.match(lines[edge]).group(1))  # type: ignore[union-attr]
    width = lines[edge].rstrip().rfind("▀") + 1
    top = edge
    while top > 0 and lines[top - 1][indent : indent + 1] == _BAR:
        top -= 1
    box = [line[indent + 1 : width].strip() for line in lines[top:edge]]
    transcript = [line[:width].rstrip() for line in lines[:top]]
    while transcript and not transcript[-1].strip():
        transcript.pop()
    status_row = lines[edge + 1] if edge + 1 < len(lines) else ""
    return OpenCodeScreen(
        transcript=transcript, box=box, status_row=status_row, has_input=True, bar_column=indent
    )


def box_text(screen: str) -> str:
    """What the input box holds: its lines but the last (agent and model), "" when empty."""
    parsed = parse_screen(screen)
    typed = [line for line in parsed.box[:-1] if line]
    if not typed or any(_PLACEHOLDER in line for line in typed):
        return ""
    return "\n".join(typed)


def _asking(lines: list[str]) -> bool:
    """A dialog in the bar below the transcript (its last lines, where the box would be)."""
    return any(_DIALOG.match(line) for line in lines[-25:])


def detect_status(screen: str) -> TerminalStatus:
    """The status the screen shows (see the module docstring for the layout)."""
    parsed = parse_screen(screen)
    if not parsed.has_input:
        if _asking(parsed.transcript):
            return TerminalStatus.WAITING_USER_ANSWER
        return TerminalStatus.PROCESSING  # starting, or a redraw in progress
    if parsed.busy:
        return TerminalStatus.PROCESSING
    if parsed.home:
        return TerminalStatus.IDLE
    end = parsed.last_end()
    if end == "completed":
        return TerminalStatus.COMPLETED
    if end == "interrupted":
        return TerminalStatus.IDLE
    if end == "open":
        # The footer of a turn that is not running and did not finish: it failed (its
        # error stands above the footer).
        return TerminalStatus.ERROR
    # A prompt with nothing of its answer yet, and no bar: the turn is starting.
    return TerminalStatus.PROCESSING


def extract_last_message(history: str) -> str:
    """The latest turn's text: its answer lines (indented 5) above its footer, or its error."""
    parsed = parse_screen(history)
    footers = parsed.footers()
    if not footers:
        return ""
    end = footers[-1][0]
    lines = parsed.transcript
    bars = [i for i in range(end) if parsed.is_bar(lines[i])]
    start = bars[-1] if bars else -1
    block = lines[start + 1 : end]
    if not any(line.strip() for line in block) and start >= 0:
        # No answer text after the last bar block: that block is the turn's error.
        first = start
        while first > 0 and parsed.is_bar(lines[first - 1]):
            first -= 1
        column = parsed.bar_column + 1
        errors = [line[column:].strip() for line in lines[first : start + 1]]
        return "\n".join(line for line in errors if line)
    kept = [line[5:] if line.startswith("     ") else line.strip() for line in block]
    return "\n".join(kept).strip("\n")
