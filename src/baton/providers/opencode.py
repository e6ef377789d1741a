"""OpenCode (npm `opencode-ai`, pinned 1.18.33) as a Baton provider.

Launch: `opencode --auto` with OPENCODE_CONFIG_CONTENT holding the user's own content
plus the role profile as an instructions file and Baton's plugin (`opencode_config`).
`--auto` approves every permission request that the user's rules do not deny, so no
dialog parks the loop. The model, the provider, keys and everything else are the user's.

Status: the screen (`opencode_screen`) and the plugin's record (`opencode_events`),
combined by `precedence.combine_signals`, with the record trusted further than other
CLIs' signals because it says how each turn ended:

1. a question or a permission request (on screen, or asked in the record) wins;
2. a turn the record holds open (a prompt taken, its session not idle again, its final
   answer not stored yet) is `processing` whatever the screen shows;
3. a turn the record says ended wins over a screen still drawing it, once the screen's
   latest footer is that turn's (no newer prompt drawn under it): `completed`, or
   `error` when it ended on an error other than an interruption. An error the screen
   alone shows is not taken: a resumed session shows the turn its killed CLI left
   unfinished exactly as a failed one;
4. a CLI that has taken no prompt yet is `idle` once its box is drawn and nothing runs;
5. without a record (plugins kept out, `--pure`) the screen decides alone.

Before all of these: a CLI this provider launched reads `processing` until the plugin
says the CLI's instance has loaded (at most 90 s). OpenCode draws its input box while
it loads and drops keys typed then.

The last answer and the tokens and cost come from the record (the messages as OpenCode
stored them); the screen is the fallback. Restart resumes the conversation with
`--session <id>`, the session of the last prompt.
"""

from __future__ import annotations

import re
import time

from baton.private import private_dir
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.hook_logs import HookLogs
from baton.providers.opencode_config import terminal_env
from baton.providers.opencode_events import ABORTED, OpenCodeEventLog
from baton.providers.opencode_screen import (
    WORKING_INDICATOR,
    box_text,
    detect_status,
    extract_last_message,
    parse_screen,
)
from baton.providers.paste import tail_shown
from baton.providers.precedence import NativeTurn, combine_signals
from baton.providers.records_wait import read_when_written
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["EVENT_LOG_FILE", "OpenCodeProvider"]

EVENT_LOG_FILE = "opencode-events.jsonl"
# A multi-line paste folded in the input box: `[Pasted ~4 lines]`.
_PASTE_FOLD = re.compile(r"\[Pasted ~?\d+ lines?\]")
_SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{8,64}")
_ARMED = "esc again to interrupt"
# How long a launched CLI reads as starting while its plugin has not loaded (a user's
# config may keep plugins out: after this the screen decides alone).
_STARTUP_SECONDS = 90.0
_NATIVE_WAIT_SECONDS = 1.0


class OpenCodeProvider(Provider):
    """Runs `opencode` in a pane, reads its screen and its plugin's record."""

    name = "opencode"
    submit_keys = ("Enter",)
    # Ctrl-C clears the input box; on an empty one it asks to be pressed again, then quits.
    exit_keys = ("C-c", "C-c", "C-c")
    # Esc arms the interrupt (`esc again to interrupt`, for 5 s); a second Esc cancels the
    # turn (`▣ … · interrupted`). Read together, the two are one Alt-Esc that does nothing,
    # so the second follows once the screen shows the first taken (`interrupt_taken`).
    interrupt_keys = ("Escape",)
    after_interrupt_keys = ("Escape",)
    working_indicator = WORKING_INDICATOR

    def __init__(self) -> None:
        self._hooks = HookLogs(EVENT_LOG_FILE, OpenCodeEventLog)
        # When each terminal's CLI was launched by this provider (runtime dir → monotonic).
        self._launched: dict[str, float] = {}

    def paste_shown(self, screen: str, text: str) -> bool:
        """The text's end in the input box, or OpenCode's fold `[Pasted ~N lines]`."""
        typed = box_text(screen)
        return bool(typed) and (_PASTE_FOLD.search(typed) is not None or tail_shown(typed, text))

    # -- launching -------------------------------------------------------------------------

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        log = ctx.runtime_dir / EVENT_LOG_FILE
        env = terminal_env(ctx.runtime_dir, ctx.env, ctx.profile.instructions, log)
        self._launched[str(ctx.runtime_dir)] = time.monotonic()
        return LaunchSpec(argv=["opencode", "--auto"], env=env)

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`opencode --auto --session <id>`, the session of the dead CLI's last prompt.

        The dead CLI's record is set aside first: a turn it left open would otherwise
        read as still running once the resumed CLI rests.
        """
        session = self._hooks.of(ctx).session_id()
        self._hooks.set_aside(ctx)
        if session is None or not _SESSION_ID.fullmatch(session):
            return None
        spec = self.launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "--session", session], env=spec.env)

    def input_pending(self, screen: str) -> bool:
        return bool(box_text(screen))

    def interrupt_taken(self, screen: str) -> bool:
        """The first Esc armed the interrupt (`esc again to interrupt`), or no turn runs
        (the box drawn, its status row still)."""
        parsed = parse_screen(screen)
        return parsed.has_input and (not parsed.busy or _ARMED in parsed.status_row)

    # -- status ----------------------------------------------------------------------------

    def detect_status(self, screen: str) -> TerminalStatus:
        return detect_status(screen)

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        seen = detect_status(screen)
        log = self._hooks.of(ctx)
        if log.asking() or seen is TerminalStatus.WAITING_USER_ANSWER:
            return TerminalStatus.WAITING_USER_ANSWER
        if not log.loaded():
            launched = self._launched.get(str(ctx.runtime_dir))
            if launched is not None and time.monotonic() - launched < _STARTUP_SECONDS:
                return TerminalStatus.PROCESSING  # its box is drawn before it takes keys
            return seen  # no record (plugins kept out): the screen decides alone
        parsed = parse_screen(screen)
        if log.fresh():
            # No prompt taken yet: at rest once its box is drawn, whatever a resumed
            # session shows of earlier turns (one its killed predecessor left unfinished
            # reads as failed on screen, and its prompt as unanswered).
            idle = parsed.has_input and not parsed.busy
            return TerminalStatus.IDLE if idle else TerminalStatus.PROCESSING
        native = self._native(log)
        if seen is TerminalStatus.ERROR:
            # OpenCode records its failures; a footer without an end on screen may be a
            # turn of the resumed session the new prompt has not been drawn under yet.
            seen = TerminalStatus.PROCESSING
        # The screen's latest footer belongs to the recorded turn when no prompt was drawn
        # after it; it may not show the turn's end yet (OpenCode redraws a moment after
        # the session rests).
        shown = parsed.last_end() is not None
        return combine_signals(
            seen,
            native,
            screen_shows_end=shown and native in (NativeTurn.FINISHED, NativeTurn.FAILED),
            finish_is_current=True,
        )

    @staticmethod
    def _native(log: OpenCodeEventLog) -> NativeTurn:
        """The latest turn as the record tells it (its final answer stored counts as its
        end; the turn record stays open until the session rests)."""
        open_turn = log.is_open()
        end = log.turn_end()
        if open_turn is None:
            return NativeTurn.UNKNOWN
        if open_turn:
            return NativeTurn.FINISHED if log.answered() else NativeTurn.OPEN
        if end is not None and end.failed:
            return NativeTurn.FAILED
        if end is not None and end.error == ABORTED:
            return NativeTurn.UNKNOWN  # interrupted: the screen shows it at rest
        return NativeTurn.FINISHED

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Prompts the CLI took (`chat.message`); the latest open until its session rests."""
        log = self._hooks.of(ctx)
        open_turn = log.is_open()
        if open_turn is None:
            return None
        return TurnRecord(started=log.prompts(), open=open_turn)

    # -- output ----------------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """Tokens and cost of the messages OpenCode stored, as its plugin recorded them."""
        return self._hooks.of(ctx).usage()

    def extract_last_message(self, history: str) -> str:
        return extract_last_message(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        from_screen = extract_last_message(history)
        log = self._hooks.of(ctx)
        open_turn = log.is_open()
        if open_turn is None or (open_turn and not log.answered()):
            return from_screen
        end = log.turn_end()
        if end is not None and end.failed:
            return end.detail or from_screen
        # The finished text part is recorded as the turn ends; give it a moment.
        return read_when_written(log.last_answer, _NATIVE_WAIT_SECONDS) or from_screen
