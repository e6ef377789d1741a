"""The Codex CLI (npm `@openai/codex`, pinned 0.169) as a Baton provider.

Launch. `codex` from `PATH`, in inline mode (`--no-alt-screen`, so the pane keeps a real
scrollback for `output?mode=full` and the last answer), without the shared background
server (`--no-daemon`), with command-line overrides only — the user's `CODEX_HOME`,
`config.toml`, model provider and login are used as they are and never written:

- `-c developer_instructions=…`: the role profile, sent as a developer message after
  Codex's own system prompt (the user's own developer_instructions come first);
- `--ask-for-approval never`: nobody is there to approve; a refused command goes back
  to the model as a failure instead of blocking the loop in a dialog;
- `--sandbox workspace-write`: commands may write the working directory (response files
  live in `WD/.tmp/agent-responses`) and temporary directories, nothing else; Codex's
  bundled bubblewrap sandbox works in this container;
- `-c notify=[…]`: `python -I -S …/codex_notify.py <runtime dir>`, followed by
  the user's own notify command when their config has one (it is run after ours).

`BATON_CODEX_APPROVAL` and `BATON_CODEX_SANDBOX` (in the terminal's environment) replace
the two policies, e.g. to record an approval dialog.

Status (`status`): the screen is read by `codex_screen.detect_status`; the native
`OSC 7501` state in the pane log (`codex_signals`) is combined with it by the shared
rule of `precedence.combine_signals` (`working` is an open turn, `done` a finished one):

1. a dialog or an error on screen wins: they are what the orchestrator must act on, and
   Codex reports neither through OSC 7501;
2. `working` beats a resting screen: a redraw glitch or a turn that has only just
   started cannot declare a working agent done;
3. `done` beats a screen still showing the answer streaming without its `Worked for`
   line: the finished turn is seen at once. It does not beat a screen that shows the
   working line or a prompt with no answer yet, nor a resting screen: `done` stays set
   until the next turn starts, so after a new prompt it is stale for a moment;
4. otherwise (no OSC seen, `idle`) the screen decides.

The terminal's own environment (`TerminalContext.env`: the server's environment plus the
terminal's `env_vars`) decides `CODEX_HOME` — the config read at launch, the notify
command chained, the rollout logs read for the last answer — and the two policies.

The notify payloads and rollout logs are Codex's own record of the final answer: the
last message comes from them first (`last-assistant-message`, `last_agent_message`),
from the scrollback second.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import tomlkit

from baton.private import private_dir
from baton.providers import codex_notify
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.codex_screen import (
    ANSWER_BULLET_PATTERN,
    detect_status,
    extract_last_message,
    split_screen,
)
from baton.providers.codex_signals import (
    PaneStateReader,
    codex_home,
    last_notify,
    rollout_last_message,
    rollout_usage,
)
from baton.providers.paste import input_box, tail_shown
from baton.providers.precedence import NativeTurn, combine_signals
from baton.providers.records_wait import read_when_written
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["CodexProvider", "toml_string"]

_OSC_TURNS = {"working": NativeTurn.OPEN, "done": NativeTurn.FINISHED}
# How long an answer read for a completed screen waits for Codex's own records (its
# notify command is a new process: seconds on a loaded machine, where 1.5 s once let the
# rendered screen, `•` bullets and all, stand in for the answer's own text).
_NATIVE_WAIT_SECONDS = 5.0
# How Codex folds a long paste in its composer.
_PASTE_FOLD = re.compile(r"\[Pasted Content \d+ chars\]")


def _native_last_message(ctx: TerminalContext) -> str | None:
    """The final answer of the latest finished turn from Codex's own records, if known.

    The notify payload names the terminal's thread; that thread's rollout log says
    whether its latest task has finished and with which message. Without a rollout
    (session logs switched off), the payload's own `last-assistant-message` is used.
    """
    payload = last_notify(ctx.runtime_dir)
    if payload is None:
        return None
    thread = str(payload.get("thread-id") or "")
    home = codex_home(ctx.env)
    if thread and (home / "sessions").is_dir():
        return rollout_last_message(home, thread)
    message = payload.get("last-assistant-message")
    return message.strip() if isinstance(message, str) else None


def toml_string(value: str) -> str:
    """`value` as a TOML basic string (what `-c key=value` parses), escaped by tomlkit."""
    return tomlkit.string(value).as_string()


def _user_config(home: Path) -> dict[str, object]:
    """The user's config.toml, read only; empty when missing or unreadable."""
    try:
        with (home / "config.toml").open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


class CodexProvider(Provider):
    """Codex CLI 0.169, and the older TUI's screen rules (docs/codex.md)."""

    name = "codex"
    # A bracketed paste is one message however long; Enter then submits it.
    submit_keys = ("Enter",)
    # Enter follows once the composer shows the paste: the text's end, or the fold
    # `[Pasted Content 8003 chars]` Codex draws for a long one.
    input_marker = "›"
    # Ctrl-C twice: the first clears the composer (or interrupts), the second quits.
    exit_keys = ("C-c", "C-c")
    # Esc stops the turn ("■ Conversation interrupted …") and leaves the composer empty.
    interrupt_keys = ("Escape",)
    approval_policy = "never"
    sandbox_mode = "workspace-write"

    def __init__(self) -> None:
        self._pane_states = PaneStateReader()

    # -- launch ---------------------------------------------------------------------------

    def paste_shown(self, screen: str, text: str) -> bool:
        box = input_box(screen, self.input_marker)
        return _PASTE_FOLD.search(box) is not None or tail_shown(box, text)

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        config = _user_config(codex_home(ctx.env))
        approval = ctx.env.get("BATON_CODEX_APPROVAL") or self.approval_policy
        sandbox = ctx.env.get("BATON_CODEX_SANDBOX") or self.sandbox_mode
        argv = [
            "codex",
            "--no-alt-screen",
            "--no-daemon",
            "--ask-for-approval",
            approval,
            "--sandbox",
            sandbox,
            "-c",
            f"notify={self._notify_command(ctx, config)}",
        ]
        instructions = self._instructions(ctx, config)
        if instructions:
            argv += ["-c", f"developer_instructions={toml_string(instructions)}"]
        return LaunchSpec(argv=argv, env={})

    def resume_launch(self, ctx: TerminalContext) -> LaunchSpec | None:
        """`codex <same options> resume <thread id>`, once a turn has named the thread.

        The thread id comes from the terminal's own notify records (Codex 0.169 keeps the
        conversation in its rollout log under that id); before any turn ended there is none.
        """
        payload = last_notify(ctx.runtime_dir)
        thread = str((payload or {}).get("thread-id") or "")
        if not re.fullmatch(r"[0-9A-Za-z-]{8,64}", thread):
            return None
        spec = self.launch(ctx)
        return LaunchSpec(argv=[*spec.argv, "resume", thread], env=spec.env)

    @staticmethod
    def _instructions(ctx: TerminalContext, config: dict[str, object]) -> str:
        own = config.get("developer_instructions")
        parts = [own.strip()] if isinstance(own, str) and own.strip() else []
        if ctx.profile.instructions.strip():
            parts.append(ctx.profile.instructions.strip())
        return "\n\n".join(parts)

    @staticmethod
    def _notify_command(ctx: TerminalContext, config: dict[str, object]) -> str:
        notify = str(Path(codex_notify.__file__).resolve())  # run by path: see its docstring
        command = [sys.executable, "-I", "-S", notify, str(ctx.runtime_dir)]
        users = config.get("notify")
        if isinstance(users, list) and all(isinstance(part, str) for part in users):
            command += users
        return tomlkit.item(command).as_string()

    def startup_keys(self, screen: str) -> tuple[str, ...]:
        tail = "\n".join(screen.rstrip().split("\n")[-30:])
        if "Trust this folder?" in tail or "Do you trust the files in this folder?" in tail:
            return ("Enter",)  # the first option, trust, is selected
        if "Use existing model" in tail:
            for line in tail.split("\n"):
                stripped = line.lstrip("› ").strip()
                if stripped.endswith("Use existing model") or "Use existing model" in stripped:
                    number = stripped.split(".", 1)[0]
                    if number.isdigit():
                        return (number,)
            return ("Down", "Enter")
        return ()

    def starting(self, ctx: TerminalContext) -> bool:
        """Given MCP servers, Codex draws its resting screen first and only then starts
        them (OSC 7501 `working`, then `idle`); a turn it begins before they answer is
        sent to the model without their tools. Starting until that `working` was seen."""
        if not ctx.profile.mcp_servers:
            return False
        turns = self._pane_states.turns(ctx.pane_log)
        return turns is None or turns[0] == 0

    # -- status -----------------------------------------------------------------------------

    def detect_status(self, screen: str) -> TerminalStatus:
        return detect_status(screen)

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        seen = detect_status(screen)
        osc = self._pane_states.state(ctx.pane_log)
        native = _OSC_TURNS.get(osc or "", NativeTurn.UNKNOWN)
        return combine_signals(
            seen,
            native,
            screen_shows_end=native is NativeTurn.FINISHED and _answer_shown(screen),
            # `done` stays set until the next turn starts: it may be the previous turn's.
            finish_is_current=False,
        )

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """Turns started as OSC 7501 tells them (`working` after anything else)."""
        turns = self._pane_states.turns(ctx.pane_log)
        if turns is None:
            return None
        return TurnRecord(started=turns[0], open=turns[1] == "working")

    # -- output -----------------------------------------------------------------------------

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The terminal's thread's tokens from its rollout log (the notify payload names it)."""
        payload = last_notify(ctx.runtime_dir)
        thread = str((payload or {}).get("thread-id") or "")
        home = codex_home(ctx.env)
        if not thread or not (home / "sessions").is_dir():
            return None
        return rollout_usage(home, thread)

    def extract_last_message(self, history: str) -> str:
        return extract_last_message(history)

    def last_message(self, history: str, ctx: TerminalContext) -> str:
        from_screen = extract_last_message(history)
        if detect_status(history) is TerminalStatus.ERROR:
            return from_screen  # the error the CLI showed, not the previous answer
        # Codex writes its records a moment after it signals the finished turn: when the
        # terminal reads completed (its OSC 7501 `done` may come before the screen shows
        # the end), give them that moment rather than answer with the rendered screen.
        finished = self.status(history, ctx) is TerminalStatus.COMPLETED
        native = read_when_written(
            lambda: _native_last_message(ctx),
            _NATIVE_WAIT_SECONDS if finished else 0.0,
            ready=lambda found: found is not None,
        )
        return native if native else from_screen


def _answer_shown(screen: str) -> bool:
    parts = split_screen(screen)
    if "esc to interrupt" in "\n".join(parts.turn):
        return False
    return any(ANSWER_BULLET_PATTERN.match(line) for line in parts.turn)
