"""`mock_cli`: the scripted agent with the screen of CAO's credential-free `mock_cli` provider.

A stock `cao-server` runs its `mock_cli` provider by typing `mock_cli --delay-ms N` into a
shell and reads the status from the screen: a line ending in the prompt `❯` means at rest,
a `> MOCK:` line before it means completed, anything else processing. CAO's wheel ships
the provider but not the binary; this is a binary for it that does the scripted agent's
real work (answers each role, writes the response file the prompt names, applies patches,
runs tests — `baton.scripted_agent.work`), so `baton run` can drive a whole loop through an
unmodified `cao-server`:

    #!/bin/sh
    exec python -m baton.scripted_agent.mock_cli "$@"     (saved as `mock_cli` on PATH)

Input arrives as a bracketed paste followed by Enter (CAO sends two; an empty one is
ignored), so a prompt of many lines is one message. Every answer line is printed as
`> MOCK: <line>`, so CAO's `mode=last` output is the answer's last line.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
import termios
import time
import tty
from pathlib import Path

from baton.scripted_agent.keys import KeyParser
from baton.scripted_agent.program import summarize
from baton.scripted_agent.work import RoleWorker

__all__ = ["MockCli", "main"]

PROMPT = "❯ "
ANSWER_PREFIX = "> MOCK: "
_BRACKETED_PASTE_ON = "\x1b[?2004h"
_BRACKETED_PASTE_OFF = "\x1b[?2004l"
_EXIT_COMMANDS = frozenset({"/exit", "/quit"})


class MockCli:
    """One `mock_cli` session on a terminal: prompt, read a message, answer, prompt."""

    def __init__(
        self, directory: Path, *, delay_seconds: float, fd_in: int = 0, fd_out: int = 1
    ) -> None:
        self.worker = RoleWorker(directory)
        self.delay_seconds = delay_seconds
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.parser = KeyParser()
        self.buffer = ""

    def _write(self, text: str) -> None:
        data = text.replace("\n", "\r\n").encode("utf-8")
        while data:
            data = data[os.write(self.fd_out, data) :]

    def run(self) -> int:
        saved = termios.tcgetattr(self.fd_in) if os.isatty(self.fd_in) else None
        if saved is not None:
            tty.setraw(self.fd_in)
        try:
            self._write(_BRACKETED_PASTE_ON + PROMPT)
            while True:
                ready, _, _ = select.select([self.fd_in], [], [])
                if not ready:
                    continue
                data = os.read(self.fd_in, 65536)
                if not data:
                    return 0
                for event in self.parser.feed(data):
                    if event.kind == "text":
                        self.buffer += event.text
                    elif event.kind == "backspace":
                        self.buffer = self.buffer[:-1]
                    elif event.kind in ("clear", "interrupt"):
                        self.buffer = ""
                    elif event.kind == "eof" and not self.buffer:
                        return 0
                    elif event.kind == "submit":
                        message, self.buffer = self.buffer, ""
                        if self._submit(message):
                            return 0
        finally:
            self._write(_BRACKETED_PASTE_OFF + "\n")
            if saved is not None:
                termios.tcsetattr(self.fd_in, termios.TCSADRAIN, saved)

    def _submit(self, message: str) -> bool:
        """Answer one message; True to quit. An empty Enter does nothing."""
        command = message.strip()
        if not command:
            return False
        if command in _EXIT_COMMANDS:
            return True
        # The echo ends the prompt line, so no line ends in `❯` while the work runs.
        self._write(f"{summarize(message, 80)}\n")
        time.sleep(self.delay_seconds)
        try:
            answer = self.worker.handle(message).answer
        except Exception as error:  # shown as the answer, like a CLI reporting a failure
            answer = f"{type(error).__name__}: {error}"
        lines = answer.rstrip("\n").split("\n")
        self._write("".join(f"{ANSWER_PREFIX}{line}\n" for line in lines) + PROMPT)
        return False


def main(argv: list[str] | None = None) -> int:
    """`mock_cli [--delay-ms N]`, as CAO's mock_cli provider starts it."""
    parser = argparse.ArgumentParser(prog="mock_cli")
    parser.add_argument("--delay-ms", type=int, default=50, help="pause before each answer")
    args = parser.parse_args(argv)
    cli = MockCli(Path.cwd(), delay_seconds=max(0, args.delay_ms) / 1000)
    try:
        return cli.run()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
