"""What a person would see in a pane: captured text normalised, or raw bytes rendered.

Status is decided from the visible screen, never from the raw byte stream, because
a TUI redraws, erases and overwrites: only the rendered result says what is shown now.
tmux already renders (`capture-pane -p`); this module trims what capture leaves behind
and, for providers that keep a raw log, renders bytes the same way with pyte.
"""

from __future__ import annotations

__all__ = ["last_lines", "normalize_screen", "render_bytes"]


def normalize_screen(text: str) -> str:
    """Trailing spaces off every line, trailing blank lines off the end, `\\n` line ends."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def last_lines(screen: str, count: int) -> list[str]:
    """The last `count` non-blank lines of a screen, oldest first."""
    lines = [line for line in normalize_screen(screen).split("\n") if line.strip()]
    return lines[-count:] if count > 0 else []


def render_bytes(data: bytes, *, columns: int = 200, rows: int = 50) -> str:
    """Render a raw terminal byte stream (a pane log) into the screen it leaves behind."""
    import pyte  # here: `baton run` reads screens as text and need not load pyte (~40 ms)

    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    stream.feed(data)
    return normalize_screen("\n".join(screen.display))
