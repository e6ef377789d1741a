"""Keyboard input of the scripted agent: bytes in, edit events out.

A bracketed paste (`ESC [200~ … ESC [201~`) becomes one piece of text, newlines and all,
so a multi-line message arrives as one message; outside a paste, Enter submits. The
parser is incremental because a paste of 100 KB arrives in many reads, and a marker may
be split between two of them.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["Event", "KeyParser"]

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


@dataclass(frozen=True)
class Event:
    """One edit: `kind` is text, submit, backspace, clear, eof or interrupt."""

    kind: str
    text: str = ""


class KeyParser:
    """Feed raw bytes, get events; keeps partial escape sequences between feeds."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._in_paste = False
        self._paste: list[str] = []

    def feed(self, data: bytes) -> list[Event]:
        self._pending += self._decoder.decode(data)
        events: list[Event] = []
        while self._pending:
            if self._in_paste:
                if not self._consume_paste(events):
                    break
                continue
            if not self._consume_key(events):
                break
        return events

    def take_lone_escape(self) -> bool:
        """Whether an Esc key was pressed on its own: an ESC left pending after a read,
        with nothing after it (call once no more bytes followed it in a moment)."""
        if self._pending == "\x1b" and not self._in_paste:
            self._pending = ""
            return True
        return False

    def _consume_paste(self, events: list[Event]) -> bool:
        end = self._pending.find(PASTE_END)
        if end < 0:
            # Keep a tail that could be the start of the end marker.
            keep = len(PASTE_END) - 1
            self._paste.append(self._pending[:-keep] if len(self._pending) > keep else "")
            self._pending = self._pending[-keep:] if len(self._pending) > keep else self._pending
            return False
        self._paste.append(self._pending[:end])
        self._pending = self._pending[end + len(PASTE_END) :]
        self._in_paste = False
        text = "".join(self._paste).replace("\r\n", "\n").replace("\r", "\n")
        self._paste = []
        events.append(Event("text", text))
        return True

    def _consume_key(self, events: list[Event]) -> bool:
        char = self._pending[0]
        if char == "\x1b":
            if PASTE_START.startswith(self._pending) and len(self._pending) < len(PASTE_START):
                return False  # maybe the start of a paste; wait for more
            if self._pending.startswith(PASTE_START):
                self._pending = self._pending[len(PASTE_START) :]
                self._in_paste = True
                return True
            return self._skip_escape()
        self._pending = self._pending[1:]
        if char in "\r\n":
            events.append(Event("submit"))
        elif char in "\x7f\x08":
            events.append(Event("backspace"))
        elif char == "\x04":
            events.append(Event("eof"))
        elif char == "\x03":
            events.append(Event("interrupt"))
        elif char == "\x15":
            events.append(Event("clear"))
        elif char == "\t" or char >= " ":
            if events and events[-1].kind == "text":
                events[-1] = Event("text", events[-1].text + char)
            else:
                events.append(Event("text", char))
        return True

    def _skip_escape(self) -> bool:
        """Drop an escape sequence (arrows, function keys, Alt-x); wait if it is partial."""
        if len(self._pending) == 1:
            return False
        if self._pending[1] != "[":
            self._pending = self._pending[2:]
            return True
        for index in range(2, len(self._pending)):
            if "\x40" <= self._pending[index] <= "\x7e":
                self._pending = self._pending[index + 1 :]
                return True
        return False
