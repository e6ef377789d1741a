"""`baton.delivery.neutralize`: no character of a message can act as a key."""

from __future__ import annotations

import pytest

from baton.delivery import is_blank, message_size, neutralize

HOSTILE = "before\x1b[201~\x15/exit\rafter"


def test_paste_end_marker_and_keys_become_visible_text() -> None:
    assert neutralize(HOSTILE) == "before␛[201~␕/exit\nafter"


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("\x1b", "␛"),
        ("\x00", "␀"),
        ("\x03", "␃"),
        ("\x04", "␄"),
        ("\x7f", "␡"),
        ("\x9b201~", "␛[201~"),  # 8-bit CSI
        ("\x9d0;title\x07", "␛]0;title␇"),  # 8-bit OSC, BEL
        ("\x85", "␛E"),  # NEL
        ("a\r\nb\rc", "a\nb\nc"),
        ("\ud800", "\ufffd"),
    ],
)
def test_each_control_has_a_visible_stand_in(raw: str, safe: str) -> None:
    assert neutralize(raw) == safe


def test_ordinary_text_is_kept_byte_for_byte() -> None:
    text = "line 1\n\tindented — naïve café ✓ 漢字 🚀 $HOME `x` \\n \"q\" 'q'\n"
    assert neutralize(text) == text


def test_no_control_character_survives() -> None:
    every = "".join(chr(code) for code in range(0x00, 0xA0))
    safe = neutralize(every)
    assert all(char in "\n\t" or 0x20 <= ord(char) < 0x7F or ord(char) > 0x9F for char in safe)
    assert neutralize(safe) == safe  # idempotent: forwarding twice changes nothing more


def test_blank_and_size() -> None:
    assert is_blank("") and is_blank(" \n\t ")
    assert not is_blank(" x ")
    assert message_size("é") == 2
