"""The one rule for combining what a CLI reports about its turn with what its screen shows.

Codex (OSC 7501 state) and Claude Code (hooks) both report their own turns; the screen
is read by the provider. When the two disagree:

1. A dialog or an error on screen wins over everything: only the screen shows that the
   CLI waits for a person, and a native signal cannot un-show an error.
2. A turn the native signal holds open wins over a resting screen: a redraw glitch or a
   scrolled-off prompt never declares a working agent done. The one exception is an
   interruption the screen shows (the CLI reports no end for it).
3. A finished turn wins over a screen still drawing it (`processing`), but only when the
   screen already shows the end of a turn (an answer, a closing line): otherwise the
   screen shows a newer prompt the signal has not caught up with. Over a resting screen
   it wins only when the signal is known to belong to the latest prompt; a signal that
   stays set until the next turn (Codex's `done`) leaves a resting screen as it is.
4. Without a native signal the screen decides alone.
"""

from __future__ import annotations

from enum import StrEnum

from baton.status import TerminalStatus

__all__ = ["NativeTurn", "combine_signals"]


class NativeTurn(StrEnum):
    """The state of the latest turn as the CLI itself reports it."""

    UNKNOWN = "unknown"  # no native signal (yet), or one that says nothing about a turn
    OPEN = "open"
    FINISHED = "finished"
    FAILED = "failed"


def combine_signals(
    seen: TerminalStatus,
    native: NativeTurn,
    *,
    screen_shows_end: bool = False,
    screen_shows_interrupt: bool = False,
    finish_is_current: bool = True,
) -> TerminalStatus:
    """The terminal's status from the screen's reading `seen` and the CLI's own `native`."""
    if seen in (TerminalStatus.WAITING_USER_ANSWER, TerminalStatus.ERROR):
        return seen
    if native is NativeTurn.OPEN:
        return seen if screen_shows_interrupt else TerminalStatus.PROCESSING
    if native in (NativeTurn.FINISHED, NativeTurn.FAILED):
        finished = TerminalStatus.ERROR if native is NativeTurn.FAILED else TerminalStatus.COMPLETED
        if seen is TerminalStatus.PROCESSING:
            return finished if screen_shows_end else seen
        return finished if finish_is_current else seen
    return seen
