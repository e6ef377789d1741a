"""Gemini CLI (npm `@google/gemini-cli`, pinned 0.61.0) as a Baton provider.

Launch: `gemini --approval-mode yolo --skip-trust` with `GEMINI_CLI_HOME` set to the
terminal's own home (`gemini_home`: the user's `~/.gemini` through symlinks, the user's
settings plus Baton's hooks, the user's global memory plus the role profile). YOLO mode
approves every tool call, so no dialog parks the loop; `--skip-trust` trusts the working
directory for this session only. The model, the API endpoint (`GOOGLE_GEMINI_BASE_URL`),
the key and the login are the user's. Where the environment says `CI=true` or
`GITHUB_ACTIONS=true`, the CLI would run headless even on the pane's terminal and exit
at once; `GEMINI_CLI_INTEGRATION_TEST=true`, the CLI's own way past that check, keeps it
interactive there (docs/gemini-cli.md).

Status: the screen (`gemini_screen`) and the hooks (`gemini_hooks`), combined by the
shared rule of `precedence.combine_signals`:

1. a dialog or an error on screen wins (`✕ [API Error …]`: the CLI ends such a turn
   with `AfterAgent` like any other, so only the screen tells a failure);
2. a turn the hooks hold open (`BeforeAgent` without `AfterAgent`) is `processing`
   whatever the screen shows between two tool calls;
3. `AfterAgent` wins over a screen still drawing the turn once the screen shows its end
   (an answer or an error); it always belongs to the latest prompt. The turn's final
   answer in the session file, written after its `BeforeAgent`, counts as `AfterAgent`
   when the screen shows that answer at rest: the CLI writes it in the millisecond it
   fires the hook, which is logged only once a shell and Python have started;
4. without hook records (hooks switched off by an admin) the screen decides.

Before all of these: a CLI this provider launched reads `processing` until its
`SessionStart` hook has run (at most 30 s). Gemini CLI draws its input box before it
has initialised, and only queues a prompt typed then.

The last answer and the token counts come from the session file the hooks name (its
`gemini` messages and their `tokens`); the scrollback is the fallback. Restart resumes
the conversation with `--resume <session id>` when the session has a file (a session
whose only turn failed has none, and the CLI would exit on it).
"""

from __future__ import annotations

import re
import time

from baton.private import private_dir
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.gemini_home import build_home
from baton.providers.gemini_hooks import (
    GeminiHookLog,
    final_answer_since,
    transcript_last_answer,
    transcript_usage,
)
from baton.providers.gemini_screen import (
    WORKING_INDICATOR,
    GeminiScreen,
    detect_status,
    extract_last_message,
    input_pending,
    parse_screen,
)
from baton.providers.hook_logs import HookLogs
from baton.providers.paste import input_box, tail_shown
from baton.providers.precedence import NativeTurn, combine_signals
from baton.providers.records_wait import read_when_written
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["GeminiCliProvider"]

HOOK_LOG_FILE = "gemini-hooks.jsonl"
# A long or multi-line paste folded in the input box: `[Pasted Text: 154 lines]`.
_PASTE_FOLD = re.compile(r"\[Pasted Text: \d+ lines?\]")
_NATIVE_WAIT_SECONDS = 1.0
# How long a launched CLI reads as starting while its SessionStart hook has not run (an
# admin may have switched hooks off: after this the screen decides alone).
_STARTUP_SECONDS = 30.0
# Gemini CLI 0.61 runs headless when one of these is exactly "true", even with a terminal
# on stdin and stdout: it wants a prompt on stdin, prints "No input provided via stdin"
# and exits with code 42 at launch. GEMINI_CLI_INTEGRATION_TEST=true skips that check (the
# terminal checks stay); it is set only then, as it also touches folder trust and sandboxes.
_CI_VARIABLES = ("CI", "GITHUB_ACTIONS")
_INTERACTIVE_IN_CI = "GEMINI_CLI_INTEGRATION_TEST"


class GeminiCliProvider(Provider):
    """Runs `gemini` in a pane, reads its screen, hooks and session file."""

    name = "gemini_cli"
    submit_keys = ("Enter",)
    # The input box's prompt mark in YOLO mode (Baton's approval mode): `* ` before the text.
    input_marker = "*"
    # Ctrl-C twice: the first clears the input (or cancels), the second quits.
    exit_keys = ("C-c", "C-c")
    # Esc cancels the turn (`ℹ Request cancelled.`) and leaves the input box empty.
    interrupt_keys = ("Escape",)
    working_indicator = WORKING_INDICATOR
    # Gemini CLI reads an Enter handled within 30 ms of the paste as a newline (its
    # fast-return buffer); on a loaded machine both are read together. A message still
    # in the input box after this long is submitted again.
    resubmit_after = 2.0

    def __init__(self) -> None:
        self._hooks = HookLogs(HOOK_LOG_FILE, GeminiHookLog)
        # When each terminal's CLI was launched by this provider (runtime dir → monotonic).
        self._launched: dict[str, float] = {}

    def paste_shown(self, screen: str, text: str) -> bool:
        """The text's end in the input box, or Gemini's fold `[Pasted Text: N lines]`."""
        box = input_box(screen, self.input_marker)
        return _PASTE_FOLD.search(box) is not None or tail_shown(box, text)

    # -- launching -------------------------------------------------------------------------

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        home = build_home(
            ctx.runtime_dir, ctx.env, ctx.profile.instructions, ctx.runtime_dir / HOOK_LOG_FILE
        )
        argv = ["gemini", "--approval-mode", "yolo", "--skip-trust"]
        env = {"GEMINI_CLI_HOME": str(home)}
        if any(ctx.env.get(name) == "true" for name in _CI_VARIABLES):
            env[_INTERACTIVE_IN_CI] = "true"
        self._launched[str(ctx.runtime_dir)] = time.monotonic()
        return LaunchSpec(argv=argv, env=env)

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`gemini <same options> --resume <session id>`, the id the hooks recorded.

        The dead CLI's hook log is set aside first: a turn it left open would otherwise
        read as still running once the resumed CLI rests.
        """
        log = self._hooks.of(ctx)
        session = log.session_id()
        transcript = log.transcript_path()
        if transcript is None or not transcript.is_file():
            # Gemini CLI keeps no file for a session whose only turn failed, and exits
            # (code 42) when asked to resume one it cannot find.
            session = None
        self._hooks.set_aside(ctx)
        if session is None:
            return None
        spec = self.launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "--resume", session], env=spec.env)

    def input_pending(self, screen: str) -> bool:
        return input_pending(screen)

    # -- status ----------------------------------------------------------------------------

    def detect_status(self, screen: str) -> TerminalStatus:
        return detect_status(screen)

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        seen = detect_status(screen)
        log = self._hooks.of(ctx)
        launched = self._launched.get(str(ctx.runtime_dir))
        if (
            launched is not None
            and not log.session_started()
            and time.monotonic() - launched < _STARTUP_SECONDS
            and seen is not TerminalStatus.WAITING_USER_ANSWER
        ):
            # The input box is drawn before the CLI has initialised; a prompt typed now
            # is only queued ("Initializing... Prompts will be queued.").
            return TerminalStatus.PROCESSING
        open_turn = log.is_open()
        parsed = parse_screen(screen)
        marker = parsed.last_marker()
        if open_turn is None:
            native = NativeTurn.UNKNOWN
        elif not open_turn or self._answer_recorded(log, parsed.busy, marker):
            native = NativeTurn.FINISHED
        else:
            native = NativeTurn.OPEN
        return combine_signals(
            seen,
            native,
            screen_shows_end=marker in ("✦ ", "✕ ")
            or (native is NativeTurn.FINISHED and _unmarked_answer_shown(parsed, log)),
            finish_is_current=True,
        )

    @staticmethod
    def _answer_recorded(log: GeminiHookLog, busy: bool, marker: str | None) -> bool:
        """The open turn's final answer is in the session file, its hook not yet logged.

        Asked only when the screen shows an answer at rest; the turn record stays open
        until `AfterAgent` is logged, so nothing is typed into the CLI before it.
        """
        opened = log.opened_at()
        transcript = log.transcript_path()
        if busy or marker != "✦ " or opened is None or transcript is None:
            return False
        return final_answer_since(transcript, opened)

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Prompts `BeforeAgent` saw; the latest open until its `AfterAgent`.

        Before the first prompt: none started once `SessionStart` shows the hooks run (so
        a first prompt is taken only when its turn starts, never on a redrawn screen);
        None while nothing says whether they run (the screen decides then).
        """
        log = self._hooks.of(ctx)
        open_turn = log.is_open()
        if open_turn is None:
            return TurnRecord(started=0, open=False) if log.session_started() else None
        return TurnRecord(started=log.prompts(), open=open_turn)

    # -- output ----------------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The session's tokens from the session file the hooks name."""
        transcript = self._hooks.of(ctx).transcript_path()
        return transcript_usage(transcript) if transcript is not None else None

    def extract_last_message(self, history: str) -> str:
        return extract_last_message(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        from_screen = extract_last_message(history)
        screen_status = detect_status(history)
        if screen_status is TerminalStatus.ERROR:
            return from_screen
        log = self._hooks.of(ctx)
        transcript = log.transcript_path()
        if transcript is None or log.is_open() is not False:
            return from_screen
        # The CLI writes the session file as the answer streams; give it a moment.
        native = read_when_written(lambda: transcript_last_answer(transcript), _NATIVE_WAIT_SECONDS)
        return native or from_screen


def _unmarked_answer_shown(parsed: GeminiScreen, log: GeminiHookLog) -> bool:
    """The finished turn's answer is on a screen at rest though no `✦` opens it: Gemini
    CLI draws an answer that opens with a code block, or the rest of a long streamed
    one, without the marker. Its last line of text under the latest prompt says the
    finish is this prompt's, not the previous one's with a new prompt just typed."""
    response = log.last_response()
    if parsed.busy or not parsed.has_input or not response:
        return False
    lines = [" ".join(line.split()) for line in response.splitlines()]
    text = [line for line in lines if line and not line.startswith("```")]
    if not text:
        return False
    shown = [" ".join(line.split()) for line in parsed.turn()[1:]]
    return any(text[-1] in line for line in shown)
