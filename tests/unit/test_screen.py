"""Screen normalisation and rendering of raw pane bytes."""

from __future__ import annotations

from baton.screen import last_lines, normalize_screen, render_bytes


def test_normalize_trims_trailing_spaces_and_blank_lines() -> None:
    assert normalize_screen("a  \r\nb\t \n   \n\n") == "a\nb"


def test_normalize_keeps_inner_blank_lines_and_leading_space() -> None:
    assert normalize_screen("  a\n\n  b  \n") == "  a\n\n  b"


def test_last_lines_skips_blank_lines() -> None:
    assert last_lines("a\n\nb\n  \nc\n\n", 2) == ["b", "c"]
    assert last_lines("", 3) == []
    assert last_lines("a", 0) == []


def test_render_bytes_applies_overwrites_like_a_terminal() -> None:
    raw = b"\xe2\xa0\x8b Working (1s)\r\x1b[2K\xe2\x80\xa2 done\r\n\xe2\x80\xba "
    assert render_bytes(raw, columns=40, rows=5) == "• done\n›"


def test_render_bytes_ignores_private_osc_sequences() -> None:
    raw = b"before\x1b]7501;turn-complete\x07 after"
    assert render_bytes(raw, columns=40, rows=3) == "before after"
