"""Text is data, never keys: make any message safe to paste into an agent CLI.

A message reaches a CLI as one bracketed paste. A byte sequence inside it that the
terminal or the CLI reads as a key would end the paste early (`ESC [201~`), submit it,
clear the input (Ctrl-U) or quit the CLI. `neutralize` replaces every such character
with a visible stand-in, so the agent still sees that something was there:

- ESC and the other C0 controls (U+0000–U+001F) except newline and tab become their
  Unicode control pictures: ESC → `␛`, NUL → `␀`, Ctrl-U → `␕`, …
- DEL (U+007F) becomes `␡`.
- C1 controls (U+0080–U+009F, the 8-bit forms of `ESC x`) become `␛` and their 7-bit
  letter: CSI (U+009B) → `␛[`, OSC (U+009D) → `␛]`.
- CR and CR LF become a newline (inside a paste they are line breaks, not Enter).
- Lone surrogates (not encodable as UTF-8) become U+FFFD.

Everything else — newlines, tabs, every printable character in any script, emoji — is
kept byte for byte. This module imports nothing from the server, so the orchestrator
uses the same function for text it forwards from one agent to another.
"""

from __future__ import annotations

import re

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "is_blank",
    "message_size",
    "neutralize",
]

# A few MiB: far more than any prompt Baton writes (tester evidence is capped well below),
# far less than what would stall a CLI's input box for minutes.
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024

_CONTROL_PICTURES_BASE = 0x2400  # U+2400 SYMBOL FOR NULL … U+241F SYMBOL FOR UNIT SEPARATOR
_DELETE_PICTURE = "\u2421"  # ␡
_ESCAPE_PICTURE = "\u241b"  # ␛
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(_CONTROL_PICTURES_BASE + code)
    if code == 0x7F:
        return _DELETE_PICTURE
    if code <= 0x9F:
        return _ESCAPE_PICTURE + chr(code - 0x40)
    return "\ufffd"


def neutralize(text: str) -> str:
    """`text` with every character a terminal could read as a key replaced visibly."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _UNSAFE.sub(_stand_in, text)


def message_size(text: str) -> int:
    """The size the limit is checked against: UTF-8 bytes of the text as sent."""
    return len(text.encode("utf-8", "surrogatepass"))


def is_blank(text: str) -> bool:
    """True for a message with nothing to submit (empty or only whitespace)."""
    return not text.strip()
