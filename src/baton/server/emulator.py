"""A terminal emulator that renders a pane's raw output the way tmux does.

`PaneEmulator` is pyte's screen with the parts of tmux's behaviour that `capture-pane`
shows and pyte leaves out or gets wrong: the alternate screen (`CSI ? 1049 h` and
friends); a scrollback fed as tmux feeds it (from the main screen only: the top line of
whatever region scrolls, and the used lines of a cleared screen, `scroll-on-clear`);
lines joined where the text wrapped (`capture-pane -J`); scroll up/down (`CSI n S`/`T`);
`CSI 3 J` clearing only the scrollback; the scroll region homing the cursor; insert and
delete line moving blank rows. `visible()` equals `capture-pane -p` and `history()`
equals `capture-pane -p -J -S - -E -`, both passed through `normalize_screen`.
"""

from __future__ import annotations

import unicodedata
from collections import deque
from typing import Any, cast

import pyte
from pyte import modes as pyte_modes
from pyte.screens import Margins, wcwidth

from baton.screen import normalize_screen

__all__ = ["HISTORY_LINES", "PaneEmulator"]

# Lines kept in memory above the screen. Older ones are dropped and `history_complete`
# turns false, so the full scrollback is then read from tmux instead.
HISTORY_LINES = 10_000

_ALT_WITH_CURSOR = 1049 << 5
_ALT_MODES = frozenset({47 << 5, 1047 << 5, _ALT_WITH_CURSOR})
_DECCOLM = 3 << 5  # tmux clears the screen but never changes its width for it
# Equal screen cells are shared between the rows of an emulator (see `_share_cells`).
_SHARED_CELLS_LIMIT = 20_000


class _Stream(pyte.ByteStream):
    """pyte's byte stream with the scroll commands tmux implements and pyte lacks."""

    csi = {**pyte.ByteStream.csi, "S": "scroll_up", "T": "scroll_down"}  # noqa: RUF012 (pyte reads it per instance)


class _Row(dict[int, Any]):
    """One screen row: written cells by column; `default` for the others, as pyte's rows."""

    __slots__ = ("default", "wraps")

    def __init__(self, default: Any) -> None:
        super().__init__()
        self.default = default
        self.wraps = False  # the text goes on in the next row (an automatic wrap)

    def __missing__(self, key: int) -> Any:
        return self.default


class _ControlFilter:
    """Drops what tmux never draws and pyte would print as text.

    Device control, application program command, privacy message and start-of-string
    sequences (`ESC P`, `ESC _`, `ESC ^`, `ESC X` up to `ESC \\`) are removed, and the
    `<`/`=` private markers of CSI (kitty keyboard, xterm queries) become `>`, which pyte
    parses and ignores. Chunk boundaries inside a sequence are carried to the next chunk.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._in_string = False

    def clean(self, chunk: bytes) -> bytes:
        data = self._pending + chunk
        self._pending = b""
        out = bytearray()
        i = 0
        size = len(data)
        while i < size:
            if self._in_string:
                end = data.find(b"\x1b\\", i)
                if end < 0:
                    if data.endswith(b"\x1b"):
                        self._pending = b"\x1b"
                    break
                self._in_string = False
                i = end + 2
                continue
            j = data.find(b"\x1b", i)
            if j < 0:
                out += data[i:]
                break
            out += data[i:j]
            if j + 2 >= size:  # too short to tell: decide with the next chunk
                self._pending = data[j:]
                break
            kind = data[j + 1]
            if kind in b"P_^X":
                self._in_string = True
                i = j + 2
            elif kind == 0x5B and data[j + 2] in b"<=":  # CSI <…, CSI =…
                out += b"\x1b[>"
                i = j + 3
            else:
                out += data[j : j + 2]
                i = j + 2
        return bytes(out)


class PaneEmulator(pyte.Screen):
    """One pane's screen, scrollback and alternate screen, fed with raw bytes."""

    def __init__(self, columns: int, lines: int, *, history_lines: int = HISTORY_LINES) -> None:
        self._history: deque[tuple[str, bool]] = deque(maxlen=history_lines)
        self._saved_main: dict[int, Any] | None = None
        self.alternate = False
        self.history_complete = True
        # The main screen under an alternate screen is unknown when the emulator started
        # (was seeded) inside the alternate screen; leaving it then cannot be rendered.
        self.main_screen_unknown = False
        self.main_screen_lost = False  # left such an alternate screen: needs reseeding
        self._drawing = False
        self._wrapping = False
        self._shared_cells: dict[Any, Any] = {}
        self._drawn_cells: dict[tuple[Any, str], Any] = {}  # (attributes, char) -> cell
        # The rendered screen, until the next change: readers ask far more often than a
        # CLI draws (a start-up's checks, a send's checks, every status read).
        self._visible: str | None = None
        super().__init__(columns, lines)
        # pyte's rows carry an instance dict and a typing object each, for the garbage
        # collector to walk; `_Row` keeps the same behaviour in slots.
        cast(Any, self.buffer).default_factory = lambda: _Row(self.default_char)
        self._stream = _Stream(self)
        self._filter = _ControlFilter()

    # -- input -------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Apply raw pane output (any chunking; split UTF-8 and escapes are fine)."""
        self._visible = None
        self._stream.feed(self._filter.clean(data))
        self._share_cells()

    def _share_cells(self) -> None:
        """Replace the cells of changed rows by shared equal ones.

        pyte makes a new `Char` (a named tuple, which the garbage collector tracks for
        ever) per drawn cell; hundreds of screens of them made each full collection
        pause the server for tens of milliseconds. Equal cells are shared instead.
        """
        shared = self._shared_cells
        if len(shared) > _SHARED_CELLS_LIMIT:
            shared.clear()
        for y in self.dirty:
            row = self.buffer.get(y)
            if row:
                for x, char in row.items():
                    row[x] = shared.setdefault(char, char)
        self.dirty.clear()

    # -- output ------------------------------------------------------------------------

    def visible(self) -> str:
        """The screen as `capture-pane -p` prints it, normalised."""
        if self._visible is None:
            rows = (self._render(self.buffer[y]) for y in range(self.lines))
            self._visible = normalize_screen("\n".join(rows))
        return self._visible

    def history(self) -> str:
        """Scrollback and screen with wrapped lines joined (`capture-pane -J -S - -E -`)."""
        rows = list(self._history)
        rows += [(self._render(self.buffer[y]), _wraps(self.buffer[y])) for y in range(self.lines)]
        lines: list[str] = []
        joined = False
        for text, wraps in rows:
            if joined:
                lines[-1] += text
            else:
                lines.append(text)
            joined = wraps
        return normalize_screen("\n".join(lines))

    def _render(self, row: Any) -> str:
        # Only the cells ever written are stored; a wide character's second cell holds
        # "", so joining the cells gives the line as a terminal shows it.
        if not row:
            return ""
        cells = [" "] * self.columns
        for x, char in row.items():
            if x < self.columns:
                cells[x] = char.data
        return "".join(cells)

    # -- tmux's behaviour ----------------------------------------------------------------

    def draw(self, data: str) -> None:
        """pyte's `draw`, with each (attributes, character) cell made once and reused.

        pyte makes a new cell (`attrs._replace`) for every character drawn: the largest
        share of the server's CPU. Where the text goes, wraps and moves the cursor is
        pyte's own logic, unchanged.
        """
        self._drawing = True
        try:
            self._draw(data.translate(self.g1_charset if self.charset else self.g0_charset))
        finally:
            self._drawing = False

    def _draw(self, text: str) -> None:
        drawn = self._drawn_cells
        if len(drawn) > _SHARED_CELLS_LIMIT:
            drawn.clear()
        columns = self.columns
        ascii_text = text.isascii()
        for char in text:
            width = 1 if ascii_text and " " <= char <= "~" else wcwidth(char)
            cursor = self.cursor
            if cursor.x == columns:
                if pyte_modes.DECAWM in self.mode:
                    self.dirty.add(cursor.y)
                    self.carriage_return()
                    self.linefeed()
                elif width > 0:
                    cursor.x -= width
            if pyte_modes.IRM in self.mode and width > 0:
                self.insert_characters(width)
            line = self.buffer[cursor.y]
            if width in (1, 2):
                attrs = cursor.attrs
                cell = drawn.get((attrs, char))
                if cell is None:
                    cell = drawn[attrs, char] = attrs._replace(data=char)
                line[cursor.x] = cell
                if width == 2 and cursor.x + 1 < columns:
                    line[cursor.x + 1] = attrs._replace(data="")
            elif width == 0:
                # Any zero-width character joins the cell before it, as tmux draws it:
                # accents, variation selectors (Qwen Code's `●︎`), zero-width spaces.
                if cursor.x:
                    last = line[cursor.x - 1]
                    line[cursor.x - 1] = last._replace(
                        data=unicodedata.normalize("NFC", last.data + char)
                    )
                elif cursor.y:
                    above = self.buffer[cursor.y - 1]
                    last = above[columns - 1]
                    above[columns - 1] = last._replace(
                        data=unicodedata.normalize("NFC", last.data + char)
                    )
            else:
                break  # unprintable, or it does not move the cursor: as pyte
            if width > 0:
                cursor.x = min(cursor.x + width, columns)
        self.dirty.add(self.cursor.y)

    def carriage_return(self) -> None:
        # Inside `draw`, a return at the end of the line is an automatic wrap.
        self._wrapping = self._drawing and self.cursor.x == self.columns
        super().carriage_return()

    def linefeed(self) -> None:
        # As tmux does, every line feed records whether the line it leaves wrapped.
        cast(_Row, self.buffer[self.cursor.y]).wraps = self._wrapping
        self._wrapping = False
        super().linefeed()

    def index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == bottom and not self.alternate:
            self._keep(self.buffer[top])
        super().index()

    def scroll_up(self, count: int = 1) -> None:
        """`CSI n S`: the scroll region moves up `count` lines; the cursor stays."""
        top, bottom = self.margins or Margins(0, self.lines - 1)
        for _ in range(max(count, 1)):
            if not self.alternate:
                self._keep(self.buffer[top])
            for y in range(top, bottom):
                self.buffer[y] = self.buffer[y + 1]
            self.buffer.pop(bottom, None)
        self.dirty.update(range(self.lines))

    def scroll_down(self, count: int = 1) -> None:
        """`CSI n T`: the scroll region moves down `count` lines; the cursor stays."""
        top, bottom = self.margins or Margins(0, self.lines - 1)
        for _ in range(max(count, 1)):
            for y in range(bottom, top, -1):
                self.buffer[y] = self.buffer[y - 1]
            self.buffer.pop(top, None)
        self.dirty.update(range(self.lines))

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how == 3:  # tmux: clear the scrollback, leave the screen alone
            self._history.clear()
            return
        whole = how == 2 or (how == 0 and self.cursor.x == 0 and self.cursor.y == 0)
        if whole and not self.alternate:
            # tmux's `scroll-on-clear`: the cleared lines go to the scrollback first.
            used = [y for y in range(self.lines) if self._render(self.buffer[y]).strip()]
            for y in range(max(used) + 1 if used else 0):
                self._keep(self.buffer[y])
        super().erase_in_display(how, *args, **kwargs)

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        shifted = {mode << 5 for mode in modes} if kwargs.get("private") else set()
        if shifted & _ALT_MODES and not self.alternate:
            self._enter_alternate(save_cursor=_ALT_WITH_CURSOR in shifted)
        kept = [m for m in modes if not kwargs.get("private") or (m << 5) not in _SKIPPED]
        if kept:
            super().set_mode(*kept, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        shifted = {mode << 5 for mode in modes} if kwargs.get("private") else set()
        if shifted & _ALT_MODES and self.alternate:
            self._leave_alternate(restore_cursor=_ALT_WITH_CURSOR in shifted)
        kept = [m for m in modes if not kwargs.get("private") or (m << 5) not in _SKIPPED]
        if kept:
            super().reset_mode(*kept, **kwargs)

    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        """SGR; a private one is a query or a keyboard setting (`CSI > 4 ; ? m`, asked by
        Gemini CLI), never drawn by tmux, so it is ignored."""
        if kwargs.get("private"):
            return
        super().select_graphic_rendition(*attrs)

    def report_device_status(self, mode: int = 0, **kwargs: Any) -> None:
        """DSR; a private one (`CSI ? 996 n`: Copilot CLI asks for the colour scheme) is a
        query tmux answers or drops, never drawn; pyte would fail on it."""
        if not kwargs.get("private"):
            super().report_device_status(mode)

    def insert_lines(self, count: int | None = None) -> None:
        """`CSI n L`, moving blank rows correctly (pyte leaves some) and keeping the column."""
        self._shift_rows(self.cursor.y, max(count or 1, 1))

    def delete_lines(self, count: int | None = None) -> None:
        """`CSI n M`, the same way."""
        self._shift_rows(self.cursor.y, -max(count or 1, 1))

    def _shift_rows(self, start: int, by: int) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if not top <= start <= bottom:
            return
        rows = [self.buffer.get(y) for y in range(start, bottom + 1)]
        blank: list[Any] = [None] * min(abs(by), len(rows))
        moved = blank + rows[: len(rows) - len(blank)] if by > 0 else rows[len(blank) :] + blank
        for y, row in zip(range(start, bottom + 1), moved, strict=True):
            if row is None:
                self.buffer.pop(y, None)
            else:
                self.buffer[y] = row
        self.dirty.update(range(start, self.lines))

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        super().set_margins(top, bottom)
        self.cursor_position()  # tmux homes the cursor for every valid region, pyte not always

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        self._visible = None
        super().resize(lines, columns)
        self.tabstops = set(range(8, self.columns, 8))

    def forget_history(self) -> None:
        """Drop the scrollback: it no longer matches tmux's (after seeding or a resize)."""
        self._history.clear()
        self.history_complete = False

    def enter_alternate_unknown_main(self) -> None:
        """Start inside the alternate screen (seeding), the main screen under it unknown."""
        self._visible = None
        self.alternate = True
        self._saved_main = {}
        self.main_screen_unknown = True

    def _keep(self, row: Any) -> None:
        if len(self._history) == self._history.maxlen:
            self.history_complete = False
        self._history.append((self._render(row), _wraps(row)))

    def _enter_alternate(self, *, save_cursor: bool) -> None:
        if save_cursor:
            self.save_cursor()
        self._saved_main = dict(self.buffer)
        self.buffer.clear()
        self.alternate = True
        self.dirty.update(range(self.lines))

    def _leave_alternate(self, *, restore_cursor: bool) -> None:
        self.main_screen_lost = self.main_screen_unknown
        self.buffer.clear()
        self.buffer.update(self._saved_main or {})
        self._saved_main = None
        self.alternate = False
        self.dirty.update(range(self.lines))
        if restore_cursor and self.savepoints:
            self.restore_cursor()


_SKIPPED = _ALT_MODES | {_DECCOLM}


def _wraps(row: Any) -> bool:
    """Whether the text of `row` goes on in the next row (an automatic wrap)."""
    return bool(getattr(row, "wraps", False))
