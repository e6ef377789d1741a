"""Text that crosses from one program to another is data, never keys.

A message typed into an agent CLI arrives as one bracketed paste. A byte sequence inside
it could end the paste early (`ESC[201~`), submit it (a carriage return), or reach the
CLI as a key (Ctrl-U, Ctrl-C, escape sequences). `neutralise_text` makes every such
character visible and inert instead of deleting it, so a reader still sees what was
there:

- ESC becomes `␛`, so no escape sequence (paste markers included) survives;
- CRLF becomes LF; every other C0 control except newline and tab becomes its Unicode
  control picture (NUL `␀`, a lone CR `␍`, Ctrl-U `␕`, …), DEL becomes `␡`;
- C1 controls (U+0080–U+009F, which some terminals read as escape sequences) become `�`.

The orchestrator applies it to everything it forwards from one agent to another (tester
evidence, review notes, upstream outputs).
"""

from __future__ import annotations

__all__ = ["neutralise_text"]

_CONTROL_PICTURES = 0x2400  # U+2400 SYMBOL FOR NULL: the picture of C0 code c is U+2400 + c
_TABLE: dict[int, str] = {
    **{code: chr(_CONTROL_PICTURES + code) for code in range(0x20) if code not in (0x09, 0x0A)},
    0x1B: "\u241b",  # ␛ (the picture of ESC, spelled out: the one that matters most)
    0x7F: "\u2421",  # ␡
    **{code: "\ufffd" for code in range(0x80, 0xA0)},
}


def neutralise_text(text: str) -> str:
    """`text` with every control character but newline and tab made visible and inert."""
    return text.replace("\r\n", "\n").translate(_TABLE)
