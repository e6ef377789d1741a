"""The scripted agent's terminal program: prompt, working indicator, answer, prompt.

It draws plain lines (no full-screen TUI) in raw mode with bracketed paste switched on,
so what tmux shows is easy for a person and for `ScriptedProvider` to read:

    Baton scripted agent · profile programmer · /work/project
    › Fix the median function … [+41 lines]
    ⠋ Working (3s · esc to interrupt)          <- while busy, redrawn in place
    • PROGRAMMER_SUMMARY                        <- the answer
      Files changed: …
    ─ Worked for 3s ─
    ›                                           <- at rest again
"""

from __future__ import annotations

import os
import select
import shutil
import sys
import termios
import threading
import time
import tty
from pathlib import Path

from baton.private import private_dir, write_private
from baton.scripted_agent import answers, ui
from baton.scripted_agent.hangs import HANG_ENV, take_hang
from baton.scripted_agent.keys import PASTE_END, PASTE_START, Event, KeyParser
from baton.scripted_agent.turns import record_turn
from baton.scripted_agent.usage import UsageRecorder
from baton.scripted_agent.work import Outcome, RoleWorker

__all__ = ["DRAW_DELAY_ENV", "EARLY_KEYS_LOG", "ScriptedAgent", "summarize"]

DRAW_DELAY_ENV = "BATON_SCRIPTED_DRAW_DELAY"
EARLY_KEYS_LOG = "early-keys.log"

_CLEAR_LINE = "\r\x1b[2K"
_BRACKETED_PASTE_ON = "\x1b[?2004h"
_BRACKETED_PASTE_OFF = "\x1b[?2004l"
_PASTING = "[pasting…]"
_KNOWN_EXIT_COMMANDS = frozenset({"/exit", "/quit"})
# How long an ESC byte waits for the rest of an escape sequence before it counts as Esc.
_ESCAPE_WAIT_SECONDS = 0.05


def summarize(text: str, width: int) -> str:
    """One line standing for a message: its first line, cut to fit, and how many follow."""
    lines = text.split("\n")
    extra = len(lines) - 1
    suffix = f" [+{extra} lines]" if extra else ""
    first = lines[0].replace("\t", " ")
    room = max(10, width - len(suffix) - 4)
    if len(first) > room:
        first = first[: room - 1] + "…"
    return first + suffix


class ScriptedAgent:
    """One interactive session on a terminal (file descriptors `fd_in`, `fd_out`)."""

    def __init__(
        self,
        *,
        profile_name: str,
        directory: Path,
        transcript_dir: Path | None = None,
        usage_file: Path | None = None,
        hang_file: Path | None = None,
        turn_log: Path | None = None,
        ask_trust: bool = False,
        ask_before_work: frozenset[str] = frozenset(),
        draw_delay: float = 0.0,
        drop_first_paste: bool = False,
        fd_in: int = 0,
        fd_out: int = 1,
    ) -> None:
        self.profile_name = profile_name
        self.directory = directory
        self.transcript_dir = transcript_dir
        self.hang_file = hang_file  # turns that hang until Esc (`baton.scripted_agent.hangs`)
        self.turn_log = turn_log
        self._turn_open = False
        self.ask_trust = ask_trust
        # Roles (output keys) whose first turn waits for a [y/n] permission answer.
        self.ask_before_work = set(ask_before_work)
        # Seconds a paste takes to show (BATON_SCRIPTED_DRAW_DELAY): a slow-drawing CLI.
        self.draw_delay = draw_delay
        # Lose the first paste and redraw (--drop-first-paste): a CLI still loading.
        self._pastes_to_drop = 1 if drop_first_paste else 0
        self._dropping = False
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.worker = RoleWorker(directory)
        self.usage = UsageRecorder(usage_file)
        self.parser = KeyParser()
        self.buffer = ""
        self._ending = ""  # a turn's last words, written with the next prompt
        # Numbered on after what an earlier CLI in this terminal received (a restart).
        self.received = _last_transcript_number(transcript_dir)

    # -- output ---------------------------------------------------------------------

    def _write(self, text: str) -> None:
        """Write to the terminal, after the held end of a turn if there is one."""
        text, self._ending = self._ending + text, ""
        data = text.replace("\n", "\r\n").encode("utf-8")
        while data:
            written = os.write(self.fd_out, data)
            data = data[written:]

    def _width(self) -> int:
        try:
            return os.get_terminal_size(self.fd_out).columns
        except OSError:
            return shutil.get_terminal_size().columns

    def _draw_prompt(self) -> None:
        shown = summarize(self.buffer, self._width()) if self.buffer else ""
        self._write(f"{_CLEAR_LINE}{ui.PROMPT} {shown}")

    def _end_turn(self, text: str) -> None:
        """A turn's last words go out with whatever is written next (the prompt), in one
        write: the working line cleared on its own would leave the echoed message as the
        last line, an idle prompt to whoever reads the screen just then."""
        self._ending += text

    # -- main loop ------------------------------------------------------------------

    def run(self) -> int:
        saved = termios.tcgetattr(self.fd_in) if os.isatty(self.fd_in) else None
        if saved is not None:
            tty.setraw(self.fd_in)
        try:
            self._write(_BRACKETED_PASTE_ON)
            self._write(
                f"Baton scripted agent · profile {self.profile_name} · {self.directory}\n"
                "Type a task and press Enter; /exit or Ctrl-D quits.\n\n"
            )
            if self.ask_trust and not self._trust_dialog():
                return 1
            return self._loop()
        finally:
            self._write(_BRACKETED_PASTE_OFF + "\n")
            if saved is not None:
                termios.tcsetattr(self.fd_in, termios.TCSADRAIN, saved)

    def _read(self, timeout: float | None) -> bytes | None:
        """Bytes from the keyboard; b"" at end of input; None when `timeout` passed."""
        ready, _, _ = select.select([self.fd_in], [], [], timeout)
        if not ready:
            return None
        return os.read(self.fd_in, 65536)

    def _trust_dialog(self) -> bool:
        return self._ask(ui.TRUST_QUESTION)

    def _ask(self, question: str) -> bool:
        """Show a [y/n] question and wait for the answer (True for yes)."""
        self._write(f"{question} ")
        while True:
            data = self._read(None)
            if not data:
                return False
            # Typed or pasted (`POST …/input` pastes): the paste markers are no answer.
            text = data.decode("utf-8", "replace")
            answer = text.replace(PASTE_START, "").replace(PASTE_END, "").strip().lower()
            if answer.startswith("y"):
                self._write("yes\n\n")
                return True
            if answer.startswith("n"):
                self._write("no\n")
                return False

    def _loop(self) -> int:
        self._draw_prompt()
        record_turn(self.turn_log, "ready")
        while True:
            data = self._read(None)
            if not data:
                return 0
            if self._drop_paste(data):
                continue
            events = self.parser.feed(data)
            for index, event in enumerate(events):
                if event.kind == "text":
                    self.buffer += event.text
                    if self.draw_delay > 0:
                        self._draw_slowly(events[index + 1 :])
                        break
                elif event.kind == "backspace":
                    self.buffer = self.buffer[:-1]
                elif event.kind in ("clear", "interrupt"):
                    self.buffer = ""
                elif event.kind == "eof":
                    if not self.buffer:
                        return 0
                elif event.kind == "submit":
                    message, self.buffer = self.buffer, ""
                    if self._submit(message):
                        return 0
            self._draw_prompt()
            if self._turn_open:  # back at the prompt, reading input again
                self._turn_open = False
                record_turn(self.turn_log, "finished")

    def _drop_paste(self, data: bytes) -> bool:
        """Whether `data` belongs to a paste to lose (`--drop-first-paste`), the way a CLI
        still loading a resumed conversation loses what is typed; redrawn once it is over."""
        if not self._dropping and not (
            self._pastes_to_drop and PASTE_START.encode("ascii") in data
        ):
            return False
        self._dropping = PASTE_END.encode("ascii") not in data
        if not self._dropping:
            self._pastes_to_drop -= 1
            self._write(f"{_CLEAR_LINE}(still loading: the input was lost)\n")
            self._draw_prompt()
        return True

    def _draw_slowly(self, unread: list[Event]) -> None:
        """Take `draw_delay` to show a paste, losing keys that arrive before it shows.

        It shows `› [pasting…]` meanwhile. A CLI still busy with a paste may read an
        early Enter as part of it; this one drops such keys and notes them in
        `early-keys.log` (next to the transcript), so a test can tell that a key came
        before the paste was on the screen.
        """
        self._write(f"{_CLEAR_LINE}{ui.PROMPT} {_PASTING}")  # the screen changes at once
        time.sleep(self.draw_delay)
        early = [event.kind for event in unread]
        while True:
            ready, _, _ = select.select([self.fd_in], [], [], 0)
            if not ready:
                break
            data = os.read(self.fd_in, 65536)
            if not data:
                break
            early.extend(event.kind for event in self.parser.feed(data))
        if early and self.transcript_dir is not None:
            private_dir(self.transcript_dir)
            with (self.transcript_dir / EARLY_KEYS_LOG).open("a", encoding="utf-8") as log:
                log.write(" ".join(early) + "\n")

    # -- one turn -------------------------------------------------------------------

    def _submit(self, message: str) -> bool:
        """Handle one submitted message; True when the agent should quit."""
        command = message.strip()
        if not command:
            return False
        if command.startswith("/") and "\n" not in command:
            # Slash commands: /exit and /quit leave, unknown ones are ignored quietly.
            return command.split()[0] in _KNOWN_EXIT_COMMANDS
        self._record(message)
        # The echo and the first working frame go out in one write, so no screen ever
        # shows the echoed message as if it were an idle prompt.
        echo = summarize(message, self._width())
        self._write(f"{_CLEAR_LINE}{ui.PROMPT} {echo}\n{ui.working_line(0, 0)}")
        if not self._permitted(message):
            self._end_turn(f"{_CLEAR_LINE}{ui.ERROR_PREFIX}the user declined the work\n\n")
            return False
        if self._hangs(message):
            self._hang()
            self._end_turn(f"{_CLEAR_LINE}{ui.INTERRUPTED_LINE}\n\n")
            return False
        outcome, error, seconds = self._work(message)
        if error is not None:
            self._end_turn(f"{_CLEAR_LINE}{ui.ERROR_PREFIX}{error}\n\n")
            return False
        assert outcome is not None
        lines = outcome.answer.rstrip("\n").split("\n")
        shown = [ui.ANSWER_BULLET + lines[0]] + [ui.ANSWER_INDENT + line for line in lines[1:]]
        if outcome.written_to is not None:
            shown.append(f"{ui.ANSWER_INDENT}(written to {outcome.written_to})")
        self._end_turn(_CLEAR_LINE + "\n".join(shown) + "\n" + ui.done_line(seconds) + "\n\n")
        return False

    def _permitted(self, message: str) -> bool:
        """Ask first when the role's first turn must wait for a permission answer."""
        target = answers.find_response_target(message)
        key = target.role.output_key if target is not None else ""
        if key not in self.ask_before_work:
            return True
        self.ask_before_work.discard(key)
        self._write(_CLEAR_LINE)
        return self._ask(ui.PERMISSION_QUESTION)

    def _hangs(self, message: str) -> bool:
        target = answers.find_response_target(message)
        return target is not None and take_hang(self.hang_file, target.role.output_key)

    def _hang(self) -> None:
        """Look busy (the indicator turns, the seconds count) until Esc or Ctrl-C."""
        started = time.monotonic()
        frame = 0
        while True:
            elapsed = int(time.monotonic() - started)
            self._write(_CLEAR_LINE + ui.working_line(frame, elapsed))
            frame += 1
            ready, _, _ = select.select([self.fd_in], [], [], 0.1)
            if not ready:
                continue
            data = os.read(self.fd_in, 65536)
            if not data:
                return
            events = self.parser.feed(data)
            if any(event.kind in ("interrupt", "eof") for event in events):
                return
            more, _, _ = select.select([self.fd_in], [], [], _ESCAPE_WAIT_SECONDS)
            if not more and self.parser.take_lone_escape():
                return

    def _work(self, message: str) -> tuple[Outcome | None, str | None, int]:
        """Run the worker in a thread while the working indicator ticks.

        The thread rings a pipe when it ends, so the answer and the idle prompt follow
        the response file at once rather than at the indicator's next tick.
        """
        started = time.monotonic()
        result: dict[str, object] = {}
        done_read, done_write = os.pipe()

        def target() -> None:
            try:
                time.sleep(self.worker.work_seconds(message))
                outcome = self.worker.handle(message)
                # Counted before the answer is drawn: whoever reads the answer finds the
                # turn's tokens already recorded.
                self.usage.add_turn(message, outcome.answer)
                result["outcome"] = outcome
            except Exception as error:  # shown on screen as the error state
                result["error"] = f"{type(error).__name__}: {error}"
            finally:
                os.write(done_write, b"!")

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        frame = 0
        try:
            while True:
                elapsed = int(time.monotonic() - started)
                self._write(_CLEAR_LINE + ui.working_line(frame, elapsed))
                frame += 1
                ready, _, _ = select.select([self.fd_in, done_read], [], [], 0.1)
                if done_read in ready:
                    break
                if self.fd_in in ready:  # type-ahead while busy goes to the next message
                    data = os.read(self.fd_in, 65536)
                    for event in self.parser.feed(data):
                        if event.kind == "text":
                            self.buffer += event.text
            thread.join()
        finally:
            os.close(done_read)
            os.close(done_write)
        seconds = max(1, round(time.monotonic() - started))
        error = result.get("error")
        outcome = result.get("outcome")
        return (
            outcome if isinstance(outcome, Outcome) else None,
            str(error) if error is not None else None,
            seconds,
        )

    def _record(self, message: str) -> None:
        """Keep each received message byte for byte (tests compare what arrived)."""
        self.received += 1
        self._turn_open = True
        record_turn(self.turn_log, "received")
        if self.transcript_dir is None:
            return
        private_dir(self.transcript_dir)
        write_private(self.transcript_dir / f"{self.received:04d}.txt", message.encode("utf-8"))


def _last_transcript_number(transcript_dir: Path | None) -> int:
    """The highest `NNNN` among the kept messages, 0 when there are none."""
    if transcript_dir is None or not transcript_dir.is_dir():
        return 0
    numbers = [int(path.stem) for path in transcript_dir.glob("*.txt") if path.stem.isdigit()]
    return max(numbers, default=0)


def _seconds(raw: str) -> float:
    """A non-negative number of seconds; 0 for an empty or unreadable value."""
    try:
        return max(0.0, float(raw)) if raw.strip() else 0.0
    except ValueError:
        return 0.0


def main(argv: list[str] | None = None) -> int:
    """`python -m baton.scripted_agent [--profile NAME] [--instructions FILE] …`."""
    import argparse

    parser = argparse.ArgumentParser(prog="baton-scripted-agent")
    parser.add_argument("--profile", default="agent", help="role profile name (for the header)")
    parser.add_argument("--instructions", type=Path, help="system prompt file (the profile)")
    parser.add_argument("--transcript-dir", type=Path, help="keep every received message here")
    parser.add_argument("--usage-file", type=Path, help="keep the cumulative token counts here")
    parser.add_argument("--turn-log", type=Path, help="record each turn's start and end here")
    parser.add_argument("--ask-trust", action="store_true", help="show a first-run dialog")
    parser.add_argument(
        "--drop-first-paste", action="store_true", help="lose the first paste (still loading)"
    )
    args = parser.parse_args(argv)
    agent = ScriptedAgent(
        profile_name=args.profile,
        directory=Path.cwd(),
        transcript_dir=args.transcript_dir,
        usage_file=args.usage_file,
        hang_file=Path(os.environ[HANG_ENV]) if os.environ.get(HANG_ENV) else None,
        turn_log=args.turn_log,
        ask_trust=args.ask_trust or os.environ.get("BATON_SCRIPTED_TRUST_DIALOG") == "1",
        ask_before_work=frozenset(
            role.strip()
            for role in os.environ.get("BATON_SCRIPTED_ASK_BEFORE_WORK", "").split(",")
            if role.strip()
        ),
        draw_delay=_seconds(os.environ.get(DRAW_DELAY_ENV, "")),
        drop_first_paste=args.drop_first_paste,
    )
    try:
        return agent.run()
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        print(f"baton-scripted-agent: {error}", file=sys.stderr)
        return 1
