"""`neutralise_text`: forwarded text keeps its words, loses every way to become keys."""

from __future__ import annotations

import pytest

from baton.delivery import neutralise_text


def test_paste_end_and_control_keys_become_visible() -> None:
    assert neutralise_text("x\x1b[201~\x15/exit\r") == "x␛[201~␕/exit␍"


def test_newlines_and_tabs_stay_and_crlf_becomes_lf() -> None:
    assert neutralise_text("a\tb\r\nc\nd") == "a\tb\nc\nd"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("\x00", "␀"), ("\x03", "␃"), ("\x7f", "␡"), ("\x9b", "\ufffd"), ("\x85", "\ufffd")],
)
def test_each_control_is_replaced(raw: str, shown: str) -> None:
    assert neutralise_text(raw) == shown


def test_no_control_character_survives() -> None:
    everything = "".join(chr(code) for code in range(0xA0))
    result = neutralise_text(everything)
    assert not [c for c in result if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
    assert "".join(chr(code) for code in range(0x20, 0x7F)) in result  # printable text kept
