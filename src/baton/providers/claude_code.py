"""Claude Code (npm `@anthropic-ai/claude-code`, pinned 2.1.328) as a provider.

Launch: `claude --dangerously-skip-permissions --settings <runtime>/claude-settings.json
--append-system-prompt-file <runtime>/instructions.md`, with the user's own HOME, Claude
configuration and login. `--settings` adds to the user's settings instead of replacing
them (their own hooks keep running), so the file carries only what a loop needs: Baton's
hooks and `skipDangerousModePermissionPrompt`. As root, skipping permissions also needs
`IS_SANDBOX=1`. The workspace-trust question is pre-answered for the working directory
with a careful edit of one key in `~/.claude.json`; `startup_keys` answers any first-run
dialog still shown (trust, the bypass-permissions warning), whose default is "No".

Status: two signals.

- The screen (`claude_screen`): a dialog where the input box should be →
  `waiting_user_answer`; `esc to interrupt` in the footer or a spinner line →
  `processing`; an `API Error` as the latest transcript marker → `error`; the turn's
  closing `✻ … for Ns` line (or an answer with nothing after it) → `completed`; no prompt
  yet → `idle`.
- The hooks (`claude_hooks`): `UserPromptSubmit` opens a turn, `Stop` closes it,
  `StopFailure` closes it with an API error.

Which wins when they disagree, and why (the shared rule of `precedence.combine_signals`):

1. A dialog or an error on screen wins over everything: only the screen shows that the
   CLI waits for a person, and a hook cannot un-show an error the user sees.
2. A turn the hooks hold open wins over a screen that reads `idle` or `completed`: the
   CLI runs `UserPromptSubmit` before it starts and `Stop` only after it has finished,
   so a redraw glitch, a scrolled-off prompt or a pause between tool calls cannot end
   the turn early. The one exception is an interruption on screen (Esc fires no Stop).
3. A finished turn (Stop) wins over an ambiguous screen, so completion is seen as soon
   as the CLI reports it; but a screen showing work *after* a Stop means a new prompt
   whose hook has not been logged yet (or a user's Stop hook that sent the model back to
   work), so there the screen wins. `StopFailure` reads as `error` the same way.
4. Without hook records (hooks disabled, a server restarted on an older terminal) the
   screen decides alone. One exception: a CLI resumed after its predecessor died mid-turn
   shows that turn's prompt with no answer; until the resumed CLI logs a hook, that
   prompt (with no spinner and nothing in the footer saying it works) reads `idle`.

`last_message` prefers the Stop hook's `last_assistant_message`, then the session
transcript the hook names, and only then the answer block read from the scrollback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baton.private import private_dir, write_private
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.claude_hooks import (
    HOOK_EVENTS,
    HookLog,
    TurnState,
    last_assistant_text,
    transcript_usage,
)
from baton.providers.claude_screen import (
    ClaudeScreen,
    Marker,
    last_answer,
    parse_screen,
    screen_status,
)
from baton.providers.cli_home import hook_command
from baton.providers.hook_logs import HookLogs
from baton.providers.paste import input_box, tail_shown
from baton.providers.precedence import NativeTurn, combine_signals
from baton.providers.turn_hooks import interrupt_open_turn, native_turn
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["ClaudeCodeProvider", "claude_config_path", "trust_workspace"]

SETTINGS_FILE = "claude-settings.json"
INSTRUCTIONS_FILE = "instructions.md"
HOOK_LOG_FILE = "claude-hooks.jsonl"
_LOCK_SECONDS = 2.0
# How Claude Code folds a long paste in its input box.
_PASTE_FOLD = re.compile(r"\[Pasted text #\d+(?: \+\d+ lines)?\]")
# First-run dialogs answered with "yes". Their highlighted default is "No, exit" and the
# menu wraps around, so keys are sent one step at a time from what the screen shows:
# `Down` while "No" is highlighted, `Enter` once the "yes" option is. A key the CLI drops
# (it ignores input until the dialog is ready) is simply sent again on the next look.
_STARTUP_ANSWERS: tuple[str, ...] = ("Yes, I trust this folder", "Yes, I accept")


def claude_config_path(env: Mapping[str, str]) -> Path:
    """Where a CLI with `env` keeps its global state (`~/.claude.json`, or CLAUDE_CONFIG_DIR)."""
    config_dir = env.get("CLAUDE_CONFIG_DIR")
    if config_dir:
        return Path(config_dir) / ".claude.json"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".claude.json"


def trust_workspace(config: Path, directory: Path) -> bool:
    """Mark `directory` trusted in Claude's config file; True when it is (or already was).

    Only `projects[<dir>].hasTrustDialogAccepted` changes: the file is read, that one key
    set, and the result renamed into place, under the lock directory Claude itself uses,
    so the user's settings and login are never rewritten from stale data. A missing or
    unreadable file is left alone (the dialog is then answered on screen).
    """
    key = str(directory)
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    if _is_trusted(data, key):
        return True
    lock = config.with_name(config.name + ".lock")
    if not _take_lock(lock):
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            return False
        projects = data.setdefault("projects", {})
        if not isinstance(projects, dict):
            return False
        project = projects.setdefault(key, {})
        if not isinstance(project, dict):
            return False
        project["hasTrustDialogAccepted"] = True
        _write_atomically(config, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return True
    except (OSError, ValueError):
        return False
    finally:
        with contextlib.suppress(OSError):
            lock.rmdir()


def _is_trusted(data: dict[str, Any], key: str) -> bool:
    project = (data.get("projects") or {}).get(key)
    return isinstance(project, dict) and project.get("hasTrustDialogAccepted") is True


def _take_lock(lock: Path) -> bool:
    deadline = time.monotonic() + _LOCK_SECONDS
    while True:
        try:
            lock.mkdir()
            return True
        except FileExistsError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        except OSError:
            return False


def _write_atomically(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777
    descriptor, temporary = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def hook_settings(log_file: Path) -> dict[str, Any]:
    """The `--settings` document: Baton's hooks and the bypass-warning opt-out."""
    command = hook_command(log_file)  # starts in milliseconds: both hooks hold the turn
    entry = [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
    return {
        "hooks": {event: entry for event in HOOK_EVENTS},
        "skipDangerousModePermissionPrompt": True,
    }


class ClaudeCodeProvider(Provider):
    """Runs `claude` in a pane, reads its screen and hooks."""

    name = "claude_code"
    submit_keys = ("Enter",)
    # Clear whatever is typed, then the CLI's own exit command.
    exit_keys = ("C-u", "/exit", "Enter")
    # Esc stops the turn ("Interrupted · What should Claude do instead?") at the prompt;
    # before any reply arrived it puts the prompt back into the input box: C-u clears it.
    interrupt_keys = ("Escape",)
    after_interrupt_keys = ("C-u",)
    # The spinner line: a turning star, a verb, a timer, or a retry note
    # (`✶ Razzmatazzing… (2s · ↓ 8 tokens)`, `✻ Connection dropped … · attempt 1/1`).
    working_indicator = re.compile(r"^[·✢✳✶✻✽*] ")
    # Enter follows once the input box shows the paste: the text's end, or the fold
    # `[Pasted text #1 +N lines]` (`[Pasted text #1]` for one long line).
    input_marker = "❯"

    def __init__(self) -> None:
        self._hooks = HookLogs(HOOK_LOG_FILE, HookLog)

    # -- launching -------------------------------------------------------------------------

    def paste_shown(self, screen: str, text: str) -> bool:
        box = input_box(screen, self.input_marker)
        return _PASTE_FOLD.search(box) is not None or tail_shown(box, text)

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        log_file = ctx.runtime_dir / HOOK_LOG_FILE
        settings = ctx.runtime_dir / SETTINGS_FILE
        write_private(settings, json.dumps(hook_settings(log_file), indent=2))
        argv = ["claude", "--dangerously-skip-permissions", "--settings", str(settings)]
        if ctx.profile.instructions.strip():
            instructions = ctx.runtime_dir / INSTRUCTIONS_FILE
            write_private(instructions, ctx.profile.instructions)
            argv += ["--append-system-prompt-file", str(instructions)]
        trust_workspace(claude_config_path(ctx.env), ctx.working_directory)
        env: dict[str, str] = {}
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Claude refuses --dangerously-skip-permissions as root outside a sandbox.
            env["IS_SANDBOX"] = "1"
        return LaunchSpec(argv=argv, env=env)

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`claude <same options> --resume <session id>`, the id its hook records carry.

        The dead CLI's hook log is set aside first: a turn it left open would otherwise
        read as still processing once the resumed CLI rests.
        """
        session = self._hooks.of(ctx).session_id()
        self._hooks.set_aside(ctx)
        if session is None:
            return None
        self._hooks.mark_resumed(ctx)
        spec = self.launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "--resume", session], env=spec.env)

    def startup_keys(self, screen: str) -> tuple[str, ...]:
        parsed = parse_screen(screen)
        if parsed.box is not None:
            return ()
        for answer in _STARTUP_ANSWERS:
            options = [line.strip() for line in parsed.footer if line.strip().endswith(answer)]
            if options:
                return ("Enter",) if options[0].startswith("❯") else ("Down",)
        return ()

    # -- status ----------------------------------------------------------------------------

    def detect_status(self, screen: str) -> TerminalStatus:
        return screen_status(screen)

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        seen = screen_status(screen)
        log = self._hooks.of(ctx)
        native = native_turn(log.turn_state())
        parsed = parse_screen(screen)
        resumed_quiet = native is NativeTurn.UNKNOWN and self._hooks.resumed(ctx)
        if resumed_quiet and _replays_dead_turn(parsed):
            return TerminalStatus.IDLE  # the dead CLI's unanswered prompt, replayed
        return combine_signals(
            seen,
            native,
            screen_shows_end=_closing(screen),
            screen_shows_interrupt=parsed.box is not None and parsed.marker() is Marker.INTERRUPTED,
            # Hooks are per prompt: a Stop always belongs to the latest one.
            finish_is_current=True,
        )

    def interrupted(self, ctx: TerminalContext) -> None:
        """Record the end Claude Code never reports for an interrupted open turn."""
        interrupt_open_turn(self._hooks.of(ctx))

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Prompts the `UserPromptSubmit` hook saw; open until `Stop` or `StopFailure`."""
        log = self._hooks.of(ctx)
        return TurnRecord(started=log.prompts(), open=log.turn_state() is TurnState.OPEN)

    # -- the last answer ---------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The session's tokens from the transcript the hooks name."""
        transcript = self._hooks.of(ctx).transcript_path()
        return transcript_usage(transcript) if transcript is not None else None

    def extract_last_message(self, history: str) -> str:
        return last_answer(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        log = self._hooks.of(ctx)
        close = log.last_close()
        if close is not None:
            message = close.get("last_assistant_message")
            if isinstance(message, str) and message.strip():
                return message.strip()
            transcript = log.transcript_path()
            if transcript is not None:
                text = last_assistant_text(transcript)
                if text:
                    return text
        return self.extract_last_message(history)


def _replays_dead_turn(parsed: ClaudeScreen) -> bool:
    """A prompt with no answer and nothing working: what `--resume` shows of a dead turn."""
    return parsed.box is not None and not parsed.busy and parsed.marker() is Marker.PROMPT


def _closing(screen: str) -> bool:
    """The spinner is only waiting for Stop hooks to finish: the turn itself is over."""
    parsed = parse_screen(screen)
    return any("stop hook" in line.lower() for line in parsed.transcript[-8:])
