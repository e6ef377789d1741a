"""Qwen Code (npm `@qwen-code/qwen-code`, pinned 0.24.4) as a Baton provider.

Launch: `qwen --approval-mode yolo --append-system-prompt=<role profile>` with
`QWEN_HOME` set to the terminal's own directory (`qwen_home`: the user's `~/.qwen`
through symlinks, the user's settings plus Baton's hooks and overrides). YOLO mode
approves every tool call, so no dialog parks the loop; the profile is appended to Qwen
Code's own system prompt, which stays whole. The endpoint, key and model are the user's:
OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL from the terminal's environment, or the
`modelProviders` and `security.auth` of the user's settings.

Status: the screen (`qwen_screen`) and the hooks (`turn_hooks`, the same events as
Claude Code's), combined by the shared rule of `precedence.combine_signals`:

1. a dialog or an error on screen wins (`✕ [API Error: …]`; the CLI also fires
   `StopFailure`, which reads as `error` once the screen shows the turn's end);
2. a turn the hooks hold open (`UserPromptSubmit` without `Stop`) is `processing`
   whatever the screen shows between two tool calls, except an interruption the screen
   shows: Esc fires no `Stop`, so `baton serve` records the end itself (`interrupted`);
3. `Stop` wins over a screen that shows the turn's end (an answer or an error), but not
   while the screen still shows it working: Qwen Code may draw the answer for seconds
   after `Stop` on a loaded machine, and an Enter typed then steers the finished turn;
4. without hook records (hooks switched off) the screen decides. One exception: a CLI
   resumed after its predecessor died mid-turn replays that turn's prompt with no answer;
   until the resumed CLI takes a prompt, that prompt (nothing working) reads `idle`.

Before all of these: a CLI this provider launched reads `processing` until its
`SessionStart` hook has run (at most 30 s), as for Gemini CLI. Given MCP servers, a new
terminal is handed out once each has listed its tools (`starting`, through `mcp_relay`).

The last answer is the `Stop` hook's `last_assistant_message`, else the session file's
last model message (`qwen_records`), else the scrollback. The tokens are the session
file's per-request records. Restart resumes the conversation with `--resume <session
id>` when the session has a file.
"""

from __future__ import annotations

import re
import time

from baton.private import private_dir
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.hook_logs import HookLogs
from baton.providers.mcp_relay import servers_settled
from baton.providers.paste import input_box, tail_shown
from baton.providers.precedence import NativeTurn, combine_signals
from baton.providers.qwen_home import build_home
from baton.providers.qwen_records import transcript_last_answer, transcript_usage
from baton.providers.qwen_screen import (
    WORKING_INDICATOR,
    detect_status,
    extract_last_message,
    input_pending,
    parse_screen,
)
from baton.providers.turn_hooks import HookLog, TurnState, interrupt_open_turn, native_turn
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["HOOK_LOG_FILE", "QwenCodeProvider"]

HOOK_LOG_FILE = "qwen-hooks.jsonl"
# A long paste folded in the input box: `[Pasted Content 5452 chars]`.
_PASTE_FOLD = re.compile(r"\[Pasted Content \d+ chars\]")
# How long a launched CLI reads as starting while its SessionStart hook has not run (an
# admin may have switched hooks off: after this the screen decides alone).
_STARTUP_SECONDS = 30.0


class QwenCodeProvider(Provider):
    """Runs `qwen` in a pane, reads its screen, hooks and session file."""

    name = "qwen_code"
    submit_keys = ("Enter",)
    # The input box's prompt mark: `* ` before the text.
    input_marker = "*"
    # Ctrl-C twice: the first clears the input (or cancels), the second quits.
    exit_keys = ("C-c", "C-c")
    # Esc cancels the turn (`● Request cancelled.`); before any reply arrived it puts the
    # prompt back into the input box: Ctrl-C clears it (a second one would quit).
    interrupt_keys = ("Escape",)
    after_interrupt_keys = ("C-c",)
    working_indicator = WORKING_INDICATOR
    # Like Gemini CLI, an Enter read together with the paste can become a newline: a
    # message still in the input box after this long is submitted again.
    resubmit_after = 2.0

    def __init__(self) -> None:
        self._hooks = HookLogs(HOOK_LOG_FILE, HookLog)
        # When each terminal's CLI was launched by this provider (runtime dir → monotonic).
        self._launched: dict[str, float] = {}

    def paste_shown(self, screen: str, text: str) -> bool:
        """The text's end in the input box, or Qwen's fold `[Pasted Content N chars]`."""
        box = input_box(screen, self.input_marker)
        return _PASTE_FOLD.search(box) is not None or tail_shown(box, text)

    # -- launching -------------------------------------------------------------------------

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        home = build_home(ctx.runtime_dir, ctx.env, ctx.runtime_dir / HOOK_LOG_FILE)
        argv = ["qwen", "--approval-mode", "yolo"]
        if ctx.profile.instructions.strip():
            # One argument with `=`: a profile starting with `-` is never read as an option.
            argv.append(f"--append-system-prompt={ctx.profile.instructions.strip()}")
        self._launched[str(ctx.runtime_dir)] = time.monotonic()
        return LaunchSpec(argv=argv, env={"QWEN_HOME": str(home)})

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`qwen <same options> --resume <session id>`, the id the hooks recorded.

        The dead CLI's hook log is set aside first: a turn it left open would otherwise
        read as still running once the resumed CLI rests.
        """
        log = self._hooks.of(ctx)
        session = log.session_id()
        transcript = log.transcript_path()
        if transcript is None or not transcript.is_file():
            session = None  # no turn was recorded: nothing to resume
        self._hooks.set_aside(ctx)
        if session is None:
            return None
        self._hooks.mark_resumed(ctx)
        spec = self.launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "--resume", session], env=spec.env)

    def input_pending(self, screen: str) -> bool:
        return input_pending(screen)

    def starting(self, ctx: TerminalContext) -> bool:
        """Qwen Code takes a prompt before it has discovered its MCP servers, and its
        screen never says when it has: starting until each server's relay has passed on
        its tools list (`mcp_relay`)."""
        return not servers_settled(str(ctx.runtime_dir), ctx.profile.mcp_servers or ())

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
            return TerminalStatus.PROCESSING
        parsed = parse_screen(screen)
        marker = parsed.last_marker()
        native = native_turn(log.turn_state())
        if (
            native is NativeTurn.UNKNOWN
            and self._hooks.resumed(ctx)
            and seen is TerminalStatus.PROCESSING
            and parsed.has_input
            and not parsed.busy
            and marker == "prompt"
        ):
            # `--resume` replays the dead CLI's last prompt; a failed or interrupted turn
            # left no answer in the session file. Until the resumed CLI takes a prompt,
            # that prompt with nothing after it and nothing working is the past.
            return TerminalStatus.IDLE
        return combine_signals(
            seen,
            native,
            # Not while the screen still shows the turn running: Qwen Code may draw an
            # answer for a while after `Stop`, and an Enter typed then steers that turn.
            screen_shows_end=marker in ("answer", "error") and not parsed.busy,
            screen_shows_interrupt=parsed.has_input and marker == "cancelled",
            finish_is_current=True,
        )

    def interrupted(self, ctx: TerminalContext) -> None:
        """Record the end Qwen Code never reports for an interrupted open turn."""
        interrupt_open_turn(self._hooks.of(ctx))

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Prompts `UserPromptSubmit` saw (continuations aside); open until `Stop`."""
        log = self._hooks.of(ctx)
        return TurnRecord(started=log.prompts(), open=log.turn_state() is TurnState.OPEN)

    # -- output ----------------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The session's tokens from the session file the hooks name."""
        transcript = self._hooks.of(ctx).transcript_path()
        return transcript_usage(transcript) if transcript is not None else None

    def extract_last_message(self, history: str) -> str:
        return extract_last_message(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        if detect_status(history) is TerminalStatus.ERROR:
            return extract_last_message(history)
        log = self._hooks.of(ctx)
        close = log.last_close()
        if close is not None and close.get("hook_event_name") == "Stop":
            message = close.get("last_assistant_message")
            if isinstance(message, str) and message.strip():
                return message.strip()
            transcript = log.transcript_path()
            if transcript is not None:
                native = transcript_last_answer(transcript)
                if native:
                    return native
        return extract_last_message(history)
