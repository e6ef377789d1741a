"""What of a screen counts as progress: the text without what moves while nothing happens.

A busy CLI redraws even when it waits on nothing: a spinner turns, a timer counts the
seconds, a mascot blinks, a running tool's bullet flashes, a retry note counts attempts.
None of that is progress. `still_text` drops the line a provider names as its working
indicator and masks the rest of the animation (spinner and block glyphs, durations,
clock times), so two screens that differ only in those compare equal. The server uses it
on each terminal's screen (`last_change_at` on `GET /terminals/{id}`); the orchestrator,
facing a server without that field, on the terminal's full output.
"""

from __future__ import annotations

import re

__all__ = ["ANIMATION_GLYPHS", "GENERIC_INDICATOR", "still_text"]

# Spinner frames (braille), the bullets Codex and Claude Code blink or turn, Claude Code's
# spinner stars. Dropped wherever they stand.
ANIMATION_GLYPHS = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏•◦●○◐◓◑◒·✢✳✶✻✽*"
# A working indicator most CLIs draw: a glyph, words, and "esc to interrupt" (Codex, the
# scripted agent): `◦ Working (3s • esc to interrupt)`, `◦ Reconnecting... 2/5 (…)`.
GENERIC_INDICATOR = re.compile(rf"^[{re.escape(ANIMATION_GLYPHS)}] .*esc to interrupt")

_GLYPHS = re.compile(rf"[{re.escape(ANIMATION_GLYPHS)}\u2580-\u259f]")
_DURATION = re.compile(r"(?<![\w.])(?:<\s*)?\d+(?:\.\d+)?\s?(?:ms|[hms])\b")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?\b")


def still_text(screen: str, indicator: re.Pattern[str] = GENERIC_INDICATOR) -> str:
    """`screen` without its animation: the indicator line gone, glyphs and times masked."""
    kept = "\n".join(line for line in screen.split("\n") if not indicator.search(line.strip()))
    masked = _CLOCK.sub("#", _DURATION.sub("#", _GLYPHS.sub("", kept)))
    return "\n".join(words for line in masked.split("\n") if (words := " ".join(line.split())))
