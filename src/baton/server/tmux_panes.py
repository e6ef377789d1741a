"""What Baton knows about tmux panes, and the binding of each pane to its terminal.

tmux numbers panes per server (`%0`, `%1`, …), so a new tmux server hands out old ids
again. A pane is therefore named by a `PaneRef` — its id *and* the terminal it belongs
to — and every act checks the pane's `@baton_terminal` option against that terminal in
the same tmux call (`bound_condition`, used by `TmuxServer`). Values only: no tmux runs here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "TERMINAL_OPTION",
    "PaneInfo",
    "PaneRef",
    "PaneSnapshot",
    "PaneState",
    "WindowRef",
    "bound_condition",
    "bound_pane",
    "tmux_quote",
]

# The per-pane user option binding a pane to its terminal (set when the pane is made).
TERMINAL_OPTION = "@baton_terminal"
_PANE_ID = re.compile(r"%[0-9]+")
_TERMINAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class PaneRef:
    """A terminal's pane: tmux's pane id and the terminal that pane must be bound to.

    Pane ids restart at `%0` with every new tmux server, so an id alone may name another
    terminal's pane. Every act on a pane checks, in the same tmux command, that the pane
    carries `@baton_terminal <terminal_id>`; a pane that does not is treated as gone.
    """

    pane_id: str
    terminal_id: str

    def valid(self) -> bool:
        """Whether both ids are plain enough to put inside a tmux format."""
        return bool(_PANE_ID.fullmatch(self.pane_id) and _TERMINAL_ID.fullmatch(self.terminal_id))


@dataclass(frozen=True)
class PaneState:
    """Liveness of a pane's command."""

    exists: bool
    dead: bool
    pid: int | None
    exit_status: int | None


@dataclass(frozen=True)
class PaneInfo:
    """One line of `list-panes -a`: liveness and size of a pane."""

    pane_id: str
    dead: bool
    pid: int | None
    exit_status: int | None
    width: int
    height: int
    terminal_id: str = ""  # the pane's `@baton_terminal` ("" when it has none)


@dataclass(frozen=True)
class WindowRef:
    """A window the server created: tmux's stable ids for it and its single pane, and the
    pane as tmux made it (so following it needs no `list-panes`)."""

    window_id: str
    pane_id: str
    pane: PaneInfo | None = None


@dataclass(frozen=True)
class PaneSnapshot:
    """What an emulator needs to start from a pane as it is now (see `snapshot`)."""

    styled: list[str]  # the visible rows with their SGR attributes (`capture-pane -e`)
    plain: str  # the visible screen as `capture-pane -p` prints it
    width: int
    height: int
    cursor_x: int
    cursor_y: int
    alternate: bool
    scroll_top: int
    scroll_bottom: int


def bound_pane(panes: Mapping[str, PaneInfo], pane: PaneRef) -> PaneInfo | None:
    """The terminal's pane in a `list_panes` answer, or None when it is gone or not its own."""
    info = panes.get(pane.pane_id)
    return info if info is not None and info.terminal_id == pane.terminal_id else None


def tmux_quote(arg: str) -> str:
    """`arg` as one word of a tmux command string: single quotes take everything literally."""
    return "'" + arg.replace("'", "'\\''") + "'"


def bound_condition(pane: PaneRef) -> str:
    """The tmux format that is true only for `pane`'s own pane, bound to its terminal."""
    return (
        f"#{{&&:#{{==:#{{pane_id}},{pane.pane_id}}},"
        f"#{{==:#{{{TERMINAL_OPTION}}},{pane.terminal_id}}}}}"
    )
