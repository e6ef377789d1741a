"""The built-in scripted agent as a provider: how to launch it and read its screen.

The program (`baton.scripted_agent`) draws a few fixed shapes (see its `ui` module);
status is read from the last non-blank lines of the visible screen:

- a `[y/n]` trust or permission question last -> waiting_user_answer
- the working indicator last            -> processing
- the prompt `›` last, after `─ Worked for Ns ─` -> completed
- the prompt last, after `✗ Error: …`   -> error
- the prompt last, anything else above  -> idle
- anything else (starting, mid-draw)    -> processing

except that while the agent's own turn log holds a turn open (a message received, its
prompt not back yet) a resting screen reads as processing (`baton.providers.precedence`).
"""

from __future__ import annotations

import sys

from baton.private import private_dir, write_private
from baton.providers.base import LaunchSpec, Provider, TerminalContext, TurnRecord
from baton.providers.paste import letters
from baton.providers.precedence import NativeTurn, combine_signals
from baton.screen import last_lines, normalize_screen
from baton.scripted_agent import ui
from baton.scripted_agent.turns import TURN_LOG, read_turns
from baton.scripted_agent.usage import USAGE_FILE, read_usage
from baton.status import TerminalStatus
from baton.usage import Usage

__all__ = ["ScriptedProvider"]

_WRITTEN_TO = "(written to "


class ScriptedProvider(Provider):
    """Runs `python -m baton.scripted_agent` with the role profile as its instructions."""

    name = "scripted"
    submit_keys = ("Enter",)
    exit_keys = ("C-u", "/exit", "Enter")
    # Esc ends a hanging turn (BATON_SCRIPTED_HANG) with `■ Interrupted`; the agent rests.
    interrupt_keys = ("Escape",)
    # The agent draws a paste once it has all of it, as a one-line summary.
    input_marker = ui.PROMPT

    def launch(self, ctx: TerminalContext) -> LaunchSpec:
        private_dir(ctx.runtime_dir)
        instructions = ctx.runtime_dir / "instructions.md"
        write_private(instructions, ctx.profile.instructions)
        return LaunchSpec(
            argv=[
                sys.executable,
                "-m",
                "baton.scripted_agent",
                "--profile",
                ctx.profile.name,
                "--instructions",
                str(instructions),
                "--transcript-dir",
                str(ctx.runtime_dir / "inputs"),
                "--usage-file",
                str(ctx.runtime_dir / USAGE_FILE),
                "--turn-log",
                str(ctx.runtime_dir / TURN_LOG),
            ],
            env={"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"},
        )

    def paste_shown(self, screen: str, text: str) -> bool:
        """The prompt line shows the message's summary: its first line, `[+N lines]`."""
        lines = last_lines(screen, 1)
        if not lines or not lines[-1].startswith(ui.PROMPT):
            return False
        shown = lines[-1][len(ui.PROMPT) :].strip()
        first, *rest = text.split("\n")
        if rest and not shown.endswith(f"[+{len(rest)} lines]"):
            return False
        # The summary keeps at least the first 9 characters of the first line.
        return letters(shown).startswith(letters(first[:9]))

    def startup_keys(self, screen: str) -> tuple[str, ...]:
        lines = last_lines(screen, 1)
        if lines and lines[-1].rstrip() == ui.TRUST_QUESTION:  # not yet answered
            return ("y",)
        return ()

    def detect_status(self, screen: str) -> TerminalStatus:
        lines = last_lines(screen, 2)
        if not lines:
            return TerminalStatus.PROCESSING
        last = lines[-1]
        if last.rstrip() in (ui.TRUST_QUESTION, ui.PERMISSION_QUESTION):
            # Unanswered: once answered, the line ends in `yes` or `no` until work shows.
            return TerminalStatus.WAITING_USER_ANSWER
        if ui.WORKING_PATTERN.match(last):
            return TerminalStatus.PROCESSING
        if last == ui.PROMPT or last.startswith(ui.PROMPT + " "):
            above = lines[-2] if len(lines) == 2 else ""
            if ui.DONE_PATTERN.match(above):
                return TerminalStatus.COMPLETED
            if above.startswith(ui.ERROR_PREFIX):
                return TerminalStatus.ERROR
            return TerminalStatus.IDLE
        return TerminalStatus.PROCESSING

    def status(self, screen: str, ctx: TerminalContext) -> TerminalStatus:
        """The screen, except that a turn the agent's own log holds open is `processing`.

        The agent logs `received` before it draws anything, so the moment the server sees
        a message taken, the status is no longer the previous turn's resting one.
        """
        seen = self.detect_status(screen)
        turns = self.turn_record(ctx)
        native = NativeTurn.OPEN if turns is not None and turns.open else NativeTurn.UNKNOWN
        return combine_signals(seen, native)

    def turn_record(self, ctx: TerminalContext) -> TurnRecord | None:
        """The agent's own turn log: a message received, the prompt drawn again."""
        turns = read_turns(ctx.runtime_dir / TURN_LOG)
        return TurnRecord(started=turns[0], open=turns[1]) if turns is not None else None

    def usage(self, ctx: TerminalContext) -> Usage | None:
        """The counts the agent keeps in its usage file (four UTF-8 bytes a token)."""
        return read_usage(ctx.runtime_dir / USAGE_FILE)

    def extract_last_message(self, history: str) -> str:
        lines = normalize_screen(history).split("\n")
        done = [i for i, line in enumerate(lines) if ui.DONE_PATTERN.match(line)]
        errors = [i for i, line in enumerate(lines) if line.startswith(ui.ERROR_PREFIX)]
        if errors and (not done or errors[-1] > done[-1]):
            return lines[errors[-1]][len(ui.ERROR_PREFIX) :]
        if not done:
            return ""
        end = done[-1]
        start = next(
            (i for i in range(end - 1, -1, -1) if lines[i].startswith(ui.ANSWER_BULLET)), None
        )
        if start is None:
            return ""
        block = [lines[start][len(ui.ANSWER_BULLET) :]]
        indent = len(ui.ANSWER_INDENT)
        for line in lines[start + 1 : end]:
            block.append(line[indent:] if line.startswith(ui.ANSWER_INDENT) else line)
        if block and block[-1].startswith(_WRITTEN_TO):
            block.pop()
        return "\n".join(block).strip("\n")
