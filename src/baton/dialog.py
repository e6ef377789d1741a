"""The question a waiting agent shows, read from its screen: what it asks and its options.

Every provider draws a dialog the same way at heart: a question, then numbered options
(`› 1. Yes, proceed (y)`, `❯ 1. Yes`: the digit, or the shortcut in brackets, picks one),
a menu with a pointer (`❯ No` over `  Yes`: arrows then Enter) or a `[y/n]` prompt, at
the bottom of the screen where the input box would be. The reader is deliberately
provider-agnostic and conservative: numbered options are only read when they count 1,
2, 3… without a gap; otherwise the dialog's last lines are the question and the answer
is free text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.screen import normalize_screen

__all__ = ["Dialog", "Option", "read_dialog"]

_OPTION = re.compile(r"^\s*[│|]?\s*(?:[›❯>▶]\s*)?(\d)[.)]\s+(\S.*?)\s*[│|]?\s*$")
_SHORTCUT = re.compile(r"\s*\((\w|esc)\)$", re.IGNORECASE)
_YES_NO = re.compile(r"[\[(]y/n[\])]", re.IGNORECASE)
_POINTER = re.compile(r"^(\s*)[❯›▶]\s+(\S.*?)\s*$")
_RULE = re.compile(r"^[\s─━═╌┄┈╭╮╰╯│┌┐└┘|+\-]*$")
_TAIL = 30
_QUESTION_LINES = 4
_BELOW_OPTIONS = 4  # at most this many lines (hints) under a dialog's last option
_RIGHT_ALIGNED = 40  # hints drawn at the right edge (`⚠ 2 warnings · f2 to view`)


@dataclass(frozen=True)
class Option:
    """One choice as the agent shows it, and the keys that pick it (pressed in order)."""

    label: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Dialog:
    question: str
    options: tuple[Option, ...] = ()


def read_dialog(screen: str) -> Dialog:
    """The question and options at the bottom of `screen` (a captured pane or its tail)."""
    lines = [line.rstrip() for line in normalize_screen(screen).split("\n")]
    while lines and (not lines[-1].strip() or _indent(lines[-1]) >= _RIGHT_ALIGNED):
        lines.pop()
    tail = _dialog_region(lines[-_TAIL:])
    found = [
        menu
        for menu in (_numbered(tail), _pointed(tail))
        if menu is not None and _nonblank(tail[menu[1] + 1 :]) <= _BELOW_OPTIONS
    ]
    if found:
        first, _, options = max(found, key=lambda menu: menu[1])  # the lowest one
        return Dialog(_question_above(tail, first), options)
    for index in range(len(tail) - 1, max(-1, len(tail) - 3), -1):
        if _YES_NO.search(tail[index]):
            question = _YES_NO.split(tail[index])[0].strip(" │|")
            return Dialog(question, (Option("Yes", ("y",)), Option("No", ("n",))))
    return Dialog(_question_above(tail, len(tail)))


def _dialog_region(tail: list[str]) -> list[str]:
    """Under the last full-width rule (Claude Code draws one over its dialogs), else all."""
    for index in range(len(tail) - 1, -1, -1):
        line = tail[index].strip()
        if len(line) >= 20 and _RULE.match(line) and index < len(tail) - 1:
            return tail[index + 1 :]
    return tail


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _nonblank(lines: list[str]) -> int:
    return sum(1 for line in lines if line.strip())


def _numbered(tail: list[str]) -> tuple[int, int, tuple[Option, ...]] | None:
    """(first and last index, the options) of the last block numbered 1..n, else None."""
    matches = [(index, _OPTION.match(line)) for index, line in enumerate(tail)]
    found = [(index, match) for index, match in matches if match is not None]
    if not found:
        return None
    block: list[tuple[int, re.Match[str]]] = []
    expected = int(found[-1][1].group(1))
    for index, match in reversed(found):
        if int(match.group(1)) != expected:
            break
        block.append((index, match))
        expected -= 1
        if expected == 0:
            break
    if expected != 0:
        return None
    block.reverse()
    return block[0][0], block[-1][0], tuple(_option(match) for _, match in block)


def _option(match: re.Match[str]) -> Option:
    label = match.group(2)
    shortcut = _SHORTCUT.search(label)
    if shortcut is None:
        return Option(label, (match.group(1),))
    key = shortcut.group(1)
    return Option(label, ("Escape" if key.lower() == "esc" else key,))


def _pointed(tail: list[str]) -> tuple[int, int, tuple[Option, ...]] | None:
    """(first and last index, the options) of a menu whose choice has a pointer
    (`❯ No` over `  Yes`): each option is reached with Up/Down, then Enter."""
    for index in range(len(tail) - 1, max(-1, len(tail) - 12), -1):
        match = _POINTER.match(tail[index])
        if match is None:
            continue
        column = match.start(2)
        start = end = index
        while start > 0 and _at_column(tail[start - 1], column):
            start -= 1
        while end + 1 < len(tail) and _at_column(tail[end + 1], column):
            end += 1
        labels = [line[column:].strip() for line in tail[start : end + 1]]
        if not 2 <= len(labels) <= 9:
            return None
        chosen = index - start
        options = tuple(
            Option(label, ("Down",) * (n - chosen) + ("Up",) * (chosen - n) + ("Enter",))
            for n, label in enumerate(labels)
        )
        return start, end, options
    return None


def _at_column(line: str, column: int) -> bool:
    """The line's text begins exactly at `column` (an unpointed option of the same menu)."""
    return len(line) > column and not line[:column].strip() and line[column] != " "


def _question_above(tail: list[str], end: int) -> str:
    """The question over the options: from its last line ending in `?` (and what follows
    it, such as the command to approve, cut after a few lines), else the lines above."""
    for index in range(end - 1, -1, -1):
        text = _text(tail[index])
        if text.endswith("?"):
            below = [_text(line) for line in tail[index + 1 : end] if _text(line)]
            below = [line for line in below if not _RULE.match(line)]
            if not below:  # what it asks about is above it (Claude Code's dialogs)
                return _lines_above(tail, end)
            shown = below[: _QUESTION_LINES - 1]
            more = ["…"] if len(below) > len(shown) else []
            return "\n".join([text, *shown, *more])
    return _lines_above(tail, end)


def _text(line: str) -> str:
    return line.strip().strip("│|").strip()


def _lines_above(tail: list[str], end: int) -> str:
    """The last few meaningful lines above `end`: at most two paragraphs (a question and
    what it is about)."""
    picked: list[str] = []
    gap: int | None = None  # how many lines were picked when the first gap came
    for line in reversed(tail[:end]):
        text = line.strip().strip("│|").strip()
        if not text or _RULE.match(line):
            if picked and gap is None:
                gap = len(picked)
            elif gap is not None and len(picked) > gap:
                break
            continue
        picked.append(text)
        if len(picked) == _QUESTION_LINES:
            break
    return "\n".join(reversed(picked))
