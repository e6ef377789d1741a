"""The pane emulator renders raw bytes the way `tmux capture-pane` shows them.

Each expectation below was taken from tmux 3.3 fed the same bytes (the tmux-backed
comparison is in tests/integration/server/test_screen_model.py).
"""

from __future__ import annotations

import random

import pyte

from baton.server.emulator import PaneEmulator


def rendered(data: bytes, *, columns: int = 80, rows: int = 24) -> PaneEmulator:
    emulator = PaneEmulator(columns, rows)
    emulator.feed(data)
    return emulator


def test_plain_lines_and_carriage_returns() -> None:
    emulator = rendered(b"hello\r\nworld\r\nover\rOV")
    assert emulator.visible() == "hello\nworld\nOVer"


def test_lines_scrolled_off_the_top_are_kept_in_history() -> None:
    lines = b"\r\n".join(str(n).encode() for n in range(1, 31))
    emulator = rendered(lines, rows=5)
    assert emulator.visible() == "26\n27\n28\n29\n30"
    assert emulator.history() == "\n".join(str(n) for n in range(1, 31))


def test_wrapped_text_is_joined_in_history_but_not_on_screen() -> None:
    emulator = rendered(b"x" * 25 + b"\r\nnext", columns=10, rows=5)
    assert emulator.visible() == "xxxxxxxxxx\nxxxxxxxxxx\nxxxxx\nnext"
    assert emulator.history() == "x" * 25 + "\nnext"


def test_alternate_screen_shows_while_on_and_restores_the_main_screen() -> None:
    main = b"main 1\r\nmain 2"
    inside = rendered(main + b"\x1b[?1049h\x1b[H\x1b[2Jfull screen app")
    assert inside.visible() == "full screen app"
    assert inside.history() == "full screen app"
    left = rendered(main + b"\x1b[?1049h\x1b[H\x1b[2Jfull screen app\x1b[?1049l back")
    assert left.visible() == "main 1\nmain 2 back"


def test_history_stays_visible_from_the_alternate_screen() -> None:
    lines = b"\r\n".join(str(n).encode() for n in range(1, 8))
    emulator = rendered(lines + b"\x1b[?1049hALT", rows=3)
    assert emulator.history().split("\n")[:4] == ["1", "2", "3", "4"]
    assert emulator.visible().endswith("ALT")


def test_clearing_the_screen_scrolls_it_into_history_and_3J_clears_history() -> None:
    cleared = rendered(b"one\r\ntwo\x1b[2J\x1b[Hthree", rows=4)
    assert cleared.visible() == "three"
    assert cleared.history() == "one\ntwo\nthree"
    wiped = rendered(b"one\r\ntwo\x1b[2J\x1b[3J\x1b[Hthree", rows=4)
    assert wiped.history() == "three"


def test_scroll_region_homes_the_cursor_and_feeds_history() -> None:
    data = b"top\x1b[2;3r\x1b[3;1Ha\r\nb\r\nc\x1b[r\x1b[1S" + "日本".encode()
    emulator = rendered(data, columns=20, rows=4)
    assert emulator.visible() == "日本\nc"
    assert emulator.history() == "\na\ntop\n日本\nc"


def test_insert_and_delete_lines_keep_the_column_and_blank_rows() -> None:
    emulator = rendered(b"a\r\nb\r\nc\r\nd\x1b[2;1H\x1b[2Lx\x1b[4;1H\x1b[1My", rows=6)
    assert emulator.visible() == "a\nx\n\ny\nd"
    moved = rendered(b"ins\x1b[3;1H\x1b[1;4H\x1b[1Mdel", rows=4)
    assert moved.visible() == "   del"


def test_sequences_tmux_does_not_draw_are_not_printed() -> None:
    data = (
        b"\x1b]0;title\x07\x1b]7501;state=done:app=codex\x1b\\"
        b"\x1b[?2026h\x1b[>1u\x1b[?u\x1b[<u\x1b[=5u\x1bP+q544e\x1b\\shown"
    )
    assert rendered(data).visible() == "shown"


def test_a_sequence_split_across_reads_is_still_understood() -> None:
    emulator = PaneEmulator(40, 5)
    for chunk in (b"\x1b", b"[<", b"u\x1bP+q5", b"44e\x1b", b"\\ok ", "日".encode()[:2]):
        emulator.feed(chunk)
    emulator.feed("日".encode()[2:])
    assert emulator.visible() == "ok 日"


def test_history_beyond_the_limit_is_reported_incomplete() -> None:
    emulator = PaneEmulator(20, 3, history_lines=5)
    emulator.feed(b"\r\n".join(str(n).encode() for n in range(10)))
    assert not emulator.history_complete
    emulator2 = PaneEmulator(20, 3, history_lines=50)
    emulator2.feed(b"\r\n".join(str(n).encode() for n in range(10)))
    assert emulator2.history_complete


class _PyteDraw(PaneEmulator):
    """The emulator drawing every character through pyte's own `draw`."""

    def _draw(self, text: str) -> None:
        pyte.Screen.draw(self, text)


def _state(emulator: PaneEmulator) -> tuple[object, ...]:
    rows = {y: dict(row) for y, row in emulator.buffer.items() if row}
    return (
        rows,
        [bool(getattr(row, "wraps", False)) for _, row in sorted(emulator.buffer.items())],
        (emulator.cursor.x, emulator.cursor.y, emulator.cursor.attrs),
        emulator.visible(),
        emulator.history(),
    )


def test_drawing_with_shared_cells_leaves_what_pytes_draw_leaves() -> None:
    pieces = [
        b"plain words ",
        b"x" * 37,
        b"\r\n",
        b"\x1b[1;31mred bold\x1b[0m",
        b"\x1b[4h inserted \x1b[4l",  # insert mode: pyte's own path
        b"\x1b[?7l no wrap at the edge " * 3 + b"\x1b[?7h",
        b"\x1b(0qqq\x1b(B",  # line drawing characters: pyte's own path
        "wide 漢字 é\u0301".encode(),
        b"\x1b[5;3H",
        b"\x1b[2K",
        b"\x1b[?1049h alt \x1b[?1049l",
        b"\x1b[3;10r",
        b"\x08\x08tab\there",
    ]
    chooser = random.Random(7)
    for _ in range(40):
        data = b"".join(chooser.choice(pieces) for _ in range(60))
        fast, reference = PaneEmulator(23, 6), _PyteDraw(23, 6)
        for start in range(0, len(data), 97):  # chunked as a pane log is read
            fast.feed(data[start : start + 97])
            reference.feed(data[start : start + 97])
        assert _state(fast) == _state(reference)


def test_private_sgr_queries_are_ignored_and_colours_still_apply() -> None:
    # Gemini CLI asks `CSI > 4 ; ? m` (XTQMODKEYS) at start; pyte reads it as a private SGR.
    emulator = rendered(b"\x1b[>4;?m\x1b[>4;2mstart \x1b[1mbold\x1b[0m")
    assert emulator.visible() == "start bold"
    assert emulator.buffer[0][6].bold


def test_private_device_status_queries_are_ignored_and_drawing_goes_on() -> None:
    # Copilot CLI asks `CSI ? 996 n` (the colour scheme) at start; pyte passed it on as a
    # private DSR its screen could not take, and the pane's drawing stopped there.
    emulator = rendered(b"before\x1b[?996n\x1b[?6n after\x1b[5n\r\nnext line")
    assert emulator.visible() == "before after\nnext line"


def test_zero_width_characters_join_the_cell_before_them_as_tmux_draws_them() -> None:
    # Qwen Code draws `●︎` and `◆︎` (a variation selector after the dot) and a zero-width
    # space after its input; tmux keeps each with the character before it, and draws on.
    emulator = rendered("  ●\ufe0e Request cancelled.\r\nzw a\u200bb end".encode())
    assert emulator.visible() == "  ●\ufe0e Request cancelled.\nzw a\u200bb end"


def test_the_screen_read_again_shows_every_later_change() -> None:
    """`visible()` is kept between changes: each feed and resize must show in the next read."""
    emulator = rendered(b"first line", columns=20, rows=3)
    assert emulator.visible() == emulator.visible() == "first line"
    emulator.feed(b"\r\nsecond")
    assert emulator.visible() == "first line\nsecond"
    emulator.resize(lines=3, columns=5)
    assert emulator.visible() == "first\nsecon"
