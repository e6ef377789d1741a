"""The question a waiting agent shows, read from its screen: what it asks and its options.

Every provider draws a dialog the same way at heart: a question, then numbered options
(`› 1. Yes, proceed (y)`, `❯ 1. Yes`) or a `[y/n]` prompt, at the bottom of the screen
where the input box would be. The reader is deliberately provider-agnostic and
conservative: options are only read when they count 1, 2, 3… without a gap; otherwise
the dialog's last lines are the question and the answer is free text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from baton.screen import normalize_screen

__all__ = ["Dialog", "Option", "read_dialog"]

_OPTION = re.compile(r"^\s*[│|]?\s*(?:[›❯>▶]\s*)?(\d)[.)]\s+(\S.*?)\s*[│|]?\s*$")
_SHORTCUT = re.compile(r"\s*\((\w|esc)\)$", re.IGNORECASE)
_YES_NO = re.compile(r"[\[(]y/n[\])]", re.IGNORECASE)
_RULE = re.compile(r"^[\s─━═╭╮╰╯│┌┐└┘|+\-]*$")
_TAIL = 30
_QUESTION_LINES = 4


@dataclass(frozen=True)
class Option:
    """One choice as the agent shows it, and the key that picks it."""

    label: str
    key: str


@dataclass(frozen=True)
class Dialog:
    question: str
    options: tuple[Option, ...] = ()


def read_dialog(screen: str) -> Dialog:
    """The question and options at the bottom of `screen` (a captured pane or its tail)."""
    lines = [line.rstrip() for line in normalize_screen(screen).split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    tail = lines[-_TAIL:]
    found = _numbered(tail)
    if found is not None:
        first, options = found
        return Dialog(_question_above(tail, first), options)
    for index in range(len(tail) - 1, -1, -1):
        if _YES_NO.search(tail[index]):
            question = _YES_NO.split(tail[index])[0].strip(" │|")
            return Dialog(question, (Option("Yes", "y"), Option("No", "n")))
    return Dialog(_question_above(tail, len(tail)))


def _numbered(tail: list[str]) -> tuple[int, tuple[Option, ...]] | None:
    """(index of option 1, the options) for the last block numbered 1..n, else None."""
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
    return block[0][0], tuple(_option(match) for _, match in block)


def _option(match: re.Match[str]) -> Option:
    label = match.group(2)
    shortcut = _SHORTCUT.search(label)
    if shortcut is None:
        return Option(label, match.group(1))
    key = shortcut.group(1)
    return Option(label, "Escape" if key.lower() == "esc" else key)


def _question_above(tail: list[str], end: int) -> str:
    """The last few meaningful lines above `end`: at most two paragraphs (a question and
    what it is about, such as the command to approve)."""
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
