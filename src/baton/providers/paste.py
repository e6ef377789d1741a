"""Reading a paste off the screen: whether the CLI's input box shows what was pasted.

The server presses the submit keys only once the paste is drawn (see
`Provider.paste_shown`). CLIs draw a paste in their own ways — the text itself, wrapped
and indented; a fold such as `[Pasted text #1 +40 lines]`; a one-line summary — so the
rules here compare letters and digits only: borders, wrapping, indentation, tabs and
the stand-ins for control characters all drop out, and what is left of the pasted
text's end must be at the end of the input box.
"""

from __future__ import annotations

import re

__all__ = ["input_box", "letters", "tail_shown"]

# How many letters and digits of the text's end must show: enough to tell the whole
# paste from a part of it, few enough to fit on one short line.
_TAIL = 16
_LETTER = re.compile(r"[A-Za-z0-9]")


def letters(text: str) -> str:
    """`text`'s ASCII letters and digits alone, in order."""
    return "".join(_LETTER.findall(text))


def input_box(screen: str, marker: str) -> str:
    """The screen from the last line that starts with `marker` (the input box) on.

    The whole screen when no line does (or `marker` is empty). History above the box
    (earlier messages, which may hold the same words) is left out.
    """
    if not marker:
        return screen
    lines = screen.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].lstrip().startswith(marker):
            return "\n".join(lines[index:])
    return screen


def tail_shown(box: str, text: str) -> bool:
    """Whether the end of `text` (its last letters and digits) shows in `box`.

    A text with no letters or digits cannot be told on screen: True.
    """
    tail = letters(text)[-_TAIL:]
    return tail in letters(box)
