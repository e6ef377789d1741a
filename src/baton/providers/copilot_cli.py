"""GitHub Copilot CLI (npm `@github/copilot`, pinned 1.0.102) as a Baton provider.

Launch: `copilot --allow-all --mode=interactive --no-auto-update
--disable-client-telemetry --session-id=<uuid>` with `COPILOT_ALLOW_ALL=true` and
`COPILOT_HOME` set to the terminal's own directory (`copilot_home`: the user's
`~/.copilot` through symlinks, the user's settings plus Baton's hooks, the user's
personal instructions followed by the role profile). `--allow-all` approves every tool,
path and URL; `COPILOT_ALLOW_ALL=true` (exactly `true`) also trusts the working
directory, so no dialog parks the loop. The model settings are the user's: the
COPILOT_PROVIDER_* variables and COPILOT_MODEL of the terminal's environment (a local
model with COPILOT_OFFLINE=true needs no GitHub sign-in), or the user's login.

Status: the screen (`copilot_screen`), the hooks (`turn_hooks`: Copilot CLI fires
Claude Code's `UserPromptSubmit` and `Stop` under those names) and the session file
(`copilot_records`: a turn that ended in `session.error` or `abort`, which fire no hook),
combined by the shared rule of `precedence.combine_signals`:

1. a dialog or an error on screen wins;
2. a turn the hooks hold open is `processing` whatever the screen shows between two
   steps, except an interruption the screen shows (`● Operation cancelled by user`);
3. `Stop` wins over a screen that shows the turn's end (an answer, an error), even while
   the footer still says `Working`: Copilot CLI reveals a streamed answer for a second
   or two after the turn ended, and a prompt typed then starts a turn of its own. A
   session error after the latest prompt reads as a failed turn (`error` once the screen
   shows it), an abort as an interrupted one;
4. without hook records the screen decides. One exception: a CLI resumed with
   `--resume` redraws the old conversation, its last turn's end included (an error, or
   no answer at all when its predecessor died mid-turn); until the resumed CLI takes a
   prompt, that screen at rest reads `idle`.

The last answer is the session file's last reply after the latest prompt, else the
screen's; the tokens are the session file's `session.usage_record` events. Restart
resumes the session with `--resume=<id>` once its file holds a prompt.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from pathlib import Path

from baton.private import private_dir, write_private
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.copilot_home import build_home
from baton.providers.copilot_records import SessionFile, parse_time
from baton.providers.copilot_screen import (
    WORKING_INDICATOR,
    detect_status,
    extract_last_message,
    input_pending,
    parse_screen,
)
from baton.providers.hook_logs import HookLogs
from baton.providers.mcp_relay import servers_settled
from baton.providers.paste import input_box, tail_shown
from baton.providers.precedence import combine_signals
from baton.providers.records_wait import read_when_written
from baton.providers.turn_hooks import HookLog, TurnState, interrupt_open_turn, native_turn
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["HOOK_LOG_FILE", "SESSION_ID_FILE", "CopilotCliProvider"]

HOOK_LOG_FILE = "copilot-hooks.jsonl"
# The session id the CLI was launched with (`--session-id`), kept for `--resume`.
SESSION_ID_FILE = "copilot-session-id"
# How long an answer read waits for the session file to catch up with the `Stop` hook.
_RECORDS_WAIT_SECONDS = 2.0
# A long paste folded in the input box: `[Paste #1 - 151 lines]`.
_PASTE_FOLD = re.compile(r"\[Paste #\d+ - \d+ lines?\]")
_SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TRUST_DIALOG = "Confirm folder trust"


class CopilotCliProvider(Provider):
    """Runs `copilot` in a pane, reads its screen, hooks and session file."""

    name = "copilot"
    submit_keys = ("Enter",)
    # The input box's prompt mark, at column 0.
    input_marker = "❯"
    # Ctrl-C ends a running turn (or clears the input); Ctrl-D quits at an empty prompt.
    exit_keys = ("C-c", "C-d")
    # Ctrl-C cancels the turn at once (`● Operation cancelled by user`) and leaves the
    # input box empty (Esc twice before any reply would put the prompt back into it).
    interrupt_keys = ("C-c",)
    working_indicator = WORKING_INDICATOR
    # An Enter read together with the paste may be taken as part of it: a message still
    # in the input box after this long is submitted again.
    resubmit_after = 2.0

    def __init__(self) -> None:
        self._hooks = HookLogs(HOOK_LOG_FILE, HookLog)
        self._sessions: dict[str, SessionFile] = {}

    def paste_shown(self, screen: str, text: str) -> bool:
        """The text's end in the input box, or Copilot's fold `[Paste #N - X lines]`."""
        box = input_box(screen, self.input_marker)
        return _PASTE_FOLD.search(box) is not None or tail_shown(box, text)

    # -- launching -------------------------------------------------------------------------

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        self._hooks.launched_fresh(ctx)
        return self._launch(ctx, f"--session-id={self._new_session(ctx)}")

    def _launch(self, ctx: TerminalContext, session_option: str) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        home = build_home(
            ctx.runtime_dir, ctx.env, ctx.profile.instructions, ctx.runtime_dir / HOOK_LOG_FILE
        )
        argv = [
            "copilot",
            "--allow-all",
            "--mode=interactive",
            "--no-auto-update",
            "--disable-client-telemetry",
            session_option,
        ]
        return LaunchSpec(argv=argv, env={"COPILOT_HOME": str(home), "COPILOT_ALLOW_ALL": "true"})

    def _new_session(self, ctx: TerminalContext) -> str:
        session = str(uuid.uuid4())
        private_dir(ctx.runtime_dir)
        write_private(ctx.runtime_dir / SESSION_ID_FILE, session + "\n")
        return session

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`copilot <same options> --resume=<id>` when the session's file holds a prompt.

        The dead CLI's hook log is set aside first: a turn it left open would otherwise
        read as still running once the resumed CLI rests.
        """
        session = self._session_id(ctx)
        taken = session is not None and _holds_prompt(self._session_file(ctx, session).path)
        self._hooks.set_aside(ctx)
        if not taken or session is None:
            return None
        self._hooks.mark_resumed(ctx)
        return self._launch(ctx, f"--resume={session}")

    def startup_keys(self, screen: str) -> tuple[str, ...]:
        """Enter takes `1. Yes` (this session only) if folder trust is asked anyway."""
        return ("Enter",) if _TRUST_DIALOG in screen else ()

    def input_pending(self, screen: str) -> bool:
        return input_pending(screen)

    def starting(self, ctx: TerminalContext) -> bool:
        """Copilot CLI rests on screen while it still connects its MCP servers, and a
        prompt typed then waits in its queue: starting until each server's relay has
        passed on its tools list (`mcp_relay`)."""
        return not servers_settled(str(ctx.runtime_dir), ctx.profile.mcp_servers or ())

    # -- status ----------------------------------------------------------------------------

    def detect_status(self, screen: str) -> TerminalStatus:
        return detect_status(screen)

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        seen = detect_status(screen)
        parsed = parse_screen(screen)
        marker = parsed.last_marker()
        state = self._turn_state(ctx)
        if (
            state is TurnState.UNKNOWN
            and self._hooks.resumed(ctx)
            and parsed.has_input
            and not parsed.busy
            and seen is not TerminalStatus.WAITING_USER_ANSWER
        ):
            # `--resume` redraws the old conversation: its end is the past.
            return TerminalStatus.IDLE
        return combine_signals(
            seen,
            native_turn(state),
            # Busy or not: the footer says `Working` while the answer is still revealed.
            screen_shows_end=marker in ("answer", "error"),
            screen_shows_interrupt=parsed.has_input and marker == "cancelled",
            finish_is_current=True,
        )

    def _turn_state(self, ctx: TerminalContext) -> TurnState:
        """The hooks' turn state, closed by a session error or abort after its prompt."""
        log = self._hooks.of(ctx)
        state = log.turn_state()
        prompt = log.last_prompt()
        if state is not TurnState.OPEN or prompt is None:
            return state
        since = parse_time(prompt.get("timestamp"))
        session = self._session_id(ctx)
        if since is None or session is None:
            return state
        end = self._session_file(ctx, session).turn_end(since)
        if end == "error":
            return TurnState.FAILED
        return TurnState.INTERRUPTED if end == "abort" else state

    def interrupted(self, ctx: TerminalContext) -> None:
        """Record the end Copilot CLI reports to no hook for an interrupted open turn."""
        interrupt_open_turn(self._hooks.of(ctx))

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Prompts `UserPromptSubmit` saw; open until `Stop`, an error or an abort."""
        log = self._hooks.of(ctx)
        return TurnRecord(started=log.prompts(), open=self._turn_state(ctx) is TurnState.OPEN)

    def _session_id(self, ctx: TerminalContext) -> str | None:
        """The session the CLI in this terminal runs (its hooks say, else its launch)."""
        session = self._hooks.of(ctx).session_id()
        if session is not None and _SESSION_ID.fullmatch(session):
            return session
        try:
            stored = (ctx.runtime_dir / SESSION_ID_FILE).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return stored if _SESSION_ID.fullmatch(stored) else None

    def _session_file(self, ctx: TerminalContext, session: str) -> SessionFile:
        path = ctx.runtime_dir / "copilot-home" / "session-state" / session / "events.jsonl"
        found = self._sessions.get(str(path))
        if found is None:
            found = self._sessions[str(path)] = SessionFile(path)
        return found

    # -- output ----------------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The session's tokens, from its session file."""
        session = self._session_id(ctx)
        return self._session_file(ctx, session).usage() if session is not None else None

    def extract_last_message(self, history: str) -> str:
        return extract_last_message(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        if detect_status(history) is TerminalStatus.ERROR:
            return extract_last_message(history)
        session = self._session_id(ctx)
        if session is not None and self._hooks.of(ctx).last_close() is not None:
            records = self._session_file(ctx, session)
            # The `Stop` hook runs before the session file has the turn's end written:
            # give the file that moment rather than answer with a half-revealed screen.
            read_when_written(records.turn_stopped, _RECORDS_WAIT_SECONDS, interval=0.02)
            native = records.last_answer()
            if native:
                return native
        return extract_last_message(history)


def _holds_prompt(path: Path) -> bool:
    """Whether a session file records a prompt (what `--resume` has to go on)."""
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if b"user.message" not in raw:
                    continue
                with contextlib.suppress(ValueError):
                    event = json.loads(raw)
                    if isinstance(event, dict) and event.get("type") == "user.message":
                        return True
    except OSError:
        return False
    return False
