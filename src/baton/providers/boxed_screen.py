"""The status rule of CLIs that draw a transcript above an input box (Qwen Code, Copilot CLI).

Each CLI's own module cuts its screen into a transcript, whether the input box is drawn,
whether a spinner runs, and the latest marker of the current turn (`answer`, `error`,
`cancelled`, another or None); what those parts mean is the same for both, and kept here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from baton.status import TerminalStatus

__all__ = ["BoxedScreen", "DialogCues", "boxed_status"]


class BoxedScreen(Protocol):
    """One screen of such a CLI, cut into the parts the rule reads."""

    @property
    def transcript(self) -> list[str]: ...

    @property
    def has_input(self) -> bool: ...

    @property
    def busy(self) -> bool: ...

    def last_marker(self) -> str | None: ...


@dataclass(frozen=True)
class DialogCues:
    """How a CLI's dialog shows while its input box is gone: one of `texts` in the last
    `text_lines` transcript lines, or a numbered option in the last `option_lines`."""

    texts: Sequence[str]
    option: re.Pattern[str]
    text_lines: int
    option_lines: int

    def shown(self, transcript: list[str]) -> bool:
        tail = "\n".join(transcript[-self.text_lines :])
        return any(text in tail for text in self.texts) or any(
            self.option.match(line) for line in transcript[-self.option_lines :]
        )


def boxed_status(parsed: BoxedScreen, dialog: DialogCues) -> TerminalStatus:
    """No input box: a dialog (waiting for an answer) or a redraw (processing). With one: a
    spinner is processing; else the turn's last marker decides, `answer` completed,
    `error` error, `cancelled` or no turn idle, anything else (tool calls) processing."""
    if not parsed.has_input:
        if dialog.shown(parsed.transcript):
            return TerminalStatus.WAITING_USER_ANSWER
        return TerminalStatus.PROCESSING
    if parsed.busy:
        return TerminalStatus.PROCESSING
    marker = parsed.last_marker()
    if marker == "error":
        return TerminalStatus.ERROR
    if marker == "answer":
        return TerminalStatus.COMPLETED
    if marker in ("cancelled", None):
        return TerminalStatus.IDLE
    return TerminalStatus.PROCESSING
