"""What a Codex CLI screen means: pure functions of the text `tmux capture-pane -p` prints.

Two generations of the Codex TUI must both read right:

- the older UI (docs/codex.md, "Status from the screen"): a `›` prompt, assistant
  answers as `• …` blocks and a context footer (`100% context left`) under the prompt;
- Codex 0.169: the composer `› Ask Codex to do anything` (a dim placeholder, or the text
  being typed), a status row (`<model> default · <cwd>`) and `← for agents · ? for
  shortcuts` under it; `• Working (12s • esc to interrupt)` above the composer while a
  turn runs; `Worked for Ns • HH:MM` when a turn has finished.

The screen is split at the composer (the last `›` line that is not a numbered dialog
option) and at the latest user prompt above it (a `›` line with text on the same line);
the lines between them are the current turn. Then, in order:

1. a dialog (approval, plan-mode question, folder trust, model choice) where the composer
   should be -> waiting_user_answer. Codex draws a dialog in place of the composer, so a
   screen that still ends with the composer and its footer shows no dialog, whatever
   dialog text an answer or a prompt above it quotes;
2. Codex-specific active-work UI (`ACTIVE_WORK_UI_PATTERN`: the `esc to interrupt`
   hint, a `• Exploring` bullet) after the last `Worked for` line -> processing. Loose
   words in the agent's prose ("running", "working", "I was exploring") never count;
3. a red `■ …` line at column 0 (answer text is always indented under its bullet) with
   no `Worked for` after it -> error; `■ Conversation interrupted`
   (a person pressed Esc) is not a failure of the CLI: the agent rests -> idle;
4. `Worked for …` after the latest prompt -> completed;
5. an answer after the latest prompt: with the old context footer (which 0.169 no longer
   draws) -> completed; in today's UI a `• …` block without `Worked for` is an answer
   still streaming -> processing;
6. a prompt with nothing after it: today's UI has just taken it -> processing; the old
   UI, no answer -> idle; no prompt at all -> idle;
7. no composer yet, or a composer without the status row or context footer under it
   (starting up: the trust dialog may still replace it; mid-draw) -> processing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.screen import normalize_screen
from baton.status import TerminalStatus

__all__ = [
    "ACTIVE_WORK_UI_PATTERN",
    "ANSWER_BULLET_PATTERN",
    "CONTEXT_FOOTER_PATTERN",
    "DIALOG_PATTERN",
    "DONE_PATTERN",
    "ERROR_PATTERN",
    "INTERRUPTED_PATTERN",
    "STATUS_ROW_PATTERN",
    "USER_PREFIX_PATTERN",
    "ScreenParts",
    "detect_status",
    "extract_last_message",
    "split_screen",
]

# Only Codex's own working UI: the interrupt hint of the status line and the Exploring
# bullet, anchored to the bullet so "I was exploring the codebase" never matches.
ACTIVE_WORK_UI_PATTERN = re.compile(
    r"\besc to interrupt\b|^[•◦]\s+Exploring\b|^[•◦]\s+Reconnecting\.\.\.", re.MULTILINE
)
# A user line: `›`, horizontal whitespace only, then text on the same line. `›\n100%…`
# (a bare prompt above the footer) is not user input.
USER_PREFIX_PATTERN = re.compile(r"^›[ \t]+\S", re.MULTILINE)
# The composer itself: `›` alone or followed by text on its line.
_PROMPT_LINE = re.compile(r"^›(?:[ \t]|$)")
# A numbered option drawn with the selection chevron (`› 1. Yes, proceed (y)`).
_OPTION_LINE = re.compile(r"^›[ \t]+\d+\.[ \t]")
CONTEXT_FOOTER_PATTERN = re.compile(r"\b\d{1,3}% context left\b")
# Today's status row under the composer: `<model> <effort> · <cwd>`. Codex draws it once
# the session is configured; a composer without it (or the old context footer) is
# still starting up, and the folder-trust dialog may yet replace it.
STATUS_ROW_PATTERN = re.compile(r"^\s+\S.*\S · [~/]")
# `Worked for 4s • 02:15`, `Worked for <1s • 06:57`, old UI `─ Worked for 1m 3s ─`.
DONE_PATTERN = re.compile(r"^\s*(?:─\s*)?Worked for <?\d+[hms]")
# An answer or tool block: a bullet at the start of the line.
ANSWER_BULLET_PATTERN = re.compile(r"^[•◦▌]\s+\S")
# Codex draws its error line at column 0; answer text is always indented under its bullet.
ERROR_PATTERN = re.compile(r"^■\s+\S")
INTERRUPTED_PATTERN = re.compile(r"^■\s+Conversation interrupted\b")
# The last line of a screen resting on the composer: the status row, the shortcuts hint or
# the old context footer. A dialog replaces the composer, so none of them ends its screen.
_COMPOSER_FOOTER = re.compile(r"\? for shortcuts\b|\b\d{1,3}% context left\b")
DIALOG_PATTERN = re.compile(
    r"Would you like to (?:run the following command|make the following edits"
    r"|grant these permissions|send input to the existing terminal)\?"
    r"|Press enter to confirm or esc to cancel"
    r"|^\s*(?:›\s+)?\d+\.\s+Yes, proceed\b"
    r"|^\s*Question \d+/\d+\b"
    r"|Trust this folder\?"
    r"|Do you trust the files in this folder\?"
    r"|^\s*(?:›\s+)?\d+\.\s+(?:Try new model|Use existing model)\b",
    re.MULTILINE,
)
# Screen furniture that is never part of an answer.
_FURNITURE = re.compile(
    r"^\s*(?:Worked for\b|Tip:|⚠|\d{1,3}% context left|← for agents|\? for shortcuts)"
)


@dataclass(frozen=True)
class ScreenParts:
    """A screen cut at its composer and at the latest user prompt above it."""

    lines: list[str]
    composer: int | None  # index of the composer line
    prompt: int | None  # index of the latest user prompt line above the composer

    @property
    def turn(self) -> list[str]:
        """The lines of the current turn: after the prompt (or the top), before the composer."""
        start = 0 if self.prompt is None else self.prompt + 1
        end = len(self.lines) if self.composer is None else self.composer
        return self.lines[start:end]

    @property
    def below_composer(self) -> list[str]:
        return [] if self.composer is None else self.lines[self.composer + 1 :]


def split_screen(screen: str) -> ScreenParts:
    lines = normalize_screen(screen).split("\n")
    composer = None
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if _PROMPT_LINE.match(line) and not _OPTION_LINE.match(line):
            composer = index
            break
    prompt = None
    if composer is not None:
        for index in range(composer - 1, -1, -1):
            if USER_PREFIX_PATTERN.match(lines[index]) and not _OPTION_LINE.match(lines[index]):
                prompt = index
                break
    return ScreenParts(lines, composer, prompt)


def rests_on_composer(parts: ScreenParts) -> bool:
    """The composer and its footer end the screen, so no dialog is open (dialogs replace it).

    Dialog text above them is prose: an answer or a prompt that quotes a dialog.
    """
    if parts.composer is None:
        return False
    tail = [line for line in parts.below_composer if line.strip()]
    return bool(tail) and bool(
        STATUS_ROW_PATTERN.match(tail[-1]) or _COMPOSER_FOOTER.search(tail[-1])
    )


def _last_index(lines: list[str], pattern: re.Pattern[str]) -> int:
    return max((i for i, line in enumerate(lines) if pattern.search(line)), default=-1)


def detect_status(screen: str) -> TerminalStatus:
    """The status a person would read off this Codex screen (see the module docstring)."""
    parts = split_screen(screen)
    if parts.composer is None:
        tail = parts.lines[-25:]
        if any(DIALOG_PATTERN.search(line) for line in tail):
            return TerminalStatus.WAITING_USER_ANSWER
        return TerminalStatus.PROCESSING
    turn = parts.turn
    after_composer = parts.below_composer
    resting = rests_on_composer(parts)
    if not resting and any(DIALOG_PATTERN.search(line) for line in turn + after_composer):
        return TerminalStatus.WAITING_USER_ANSWER
    old_ui = any(CONTEXT_FOOTER_PATTERN.search(line) for line in after_composer)
    if not old_ui and not any(STATUS_ROW_PATTERN.match(line) for line in after_composer):
        return TerminalStatus.PROCESSING
    done = _last_index(turn, DONE_PATTERN)
    active = _last_index(turn, ACTIVE_WORK_UI_PATTERN)
    if active > done:
        return TerminalStatus.PROCESSING
    error = _last_index(turn, ERROR_PATTERN)
    if error > done:
        if INTERRUPTED_PATTERN.match(turn[error]):
            return TerminalStatus.IDLE
        return TerminalStatus.ERROR
    if done >= 0:
        return TerminalStatus.COMPLETED
    answered = any(ANSWER_BULLET_PATTERN.match(line) for line in turn)
    if parts.prompt is None:
        # No prompt in view: a fresh terminal, or a long answer that pushed it off screen.
        if answered and old_ui:
            return TerminalStatus.COMPLETED
        return TerminalStatus.PROCESSING if answered else TerminalStatus.IDLE
    if old_ui:
        return TerminalStatus.COMPLETED if answered else TerminalStatus.IDLE
    return TerminalStatus.PROCESSING


def extract_last_message(history: str) -> str:
    """The last assistant answer in the scrollback: its final `• …` block, bullet removed.

    Tool blocks (`• Ran …`, `• Explored`, `• Edited …`) and the status furniture are
    skipped; the answer is the last bullet block of the latest turn that is not one.
    """
    parts = split_screen(history)
    turn = parts.turn
    blocks: list[list[str]] = []
    for line in turn:
        if ANSWER_BULLET_PATTERN.match(line) or ERROR_PATTERN.match(line):
            blocks.append([line])
        elif blocks and not _FURNITURE.match(line):
            blocks[-1].append(line)
    for block in reversed(blocks):
        head = block[0].lstrip()
        if ERROR_PATTERN.match(head):
            return head[1:].strip()
        if _is_tool_block(head):
            continue
        body = [head[1:].lstrip()] + [_dedent(line) for line in block[1:]]
        return "\n".join(body).strip("\n")
    return ""


_TOOL_HEADS = re.compile(
    r"^[•◦]\s+(?:Ran|Running|Explored|Exploring|Edited|Added|Deleted|Updated Plan|Read|"
    r"Searched|Listed|Waited|Working|Called|Calling|You ran)\b"
)


def _is_tool_block(head: str) -> bool:
    return bool(_TOOL_HEADS.match(head)) or "esc to interrupt" in head


def _dedent(line: str) -> str:
    return line[2:] if line.startswith("  ") else line.lstrip()
