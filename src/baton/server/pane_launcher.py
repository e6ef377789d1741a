"""The first program of every pane: wait for the pane log, take the environment, exec the CLI.

    python -I -S pane_launcher.py <gate file> <env file> <command> [args…]

The pane's environment (API keys included) travels in `<env file>`, a JSON object in
the terminal's private runtime directory (0600), never on a command line where `ps`
would show it to every user. The launcher waits until the server has attached the pane
log (the gate file appears), so the log misses nothing; reads and deletes the env file;
then replaces itself with the command, so no launcher stays behind.

Standard library only and run by path with `-S`: it starts in a few milliseconds and
works whatever the pane's Python path is.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

GATE_WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.02
EXIT_LAUNCH_FAILED = 127


def _wait_for_gate(gate: str) -> None:
    deadline = time.monotonic() + GATE_WAIT_SECONDS
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    with contextlib.suppress(OSError):
        os.unlink(gate)


def _read_environment(env_file: str) -> dict[str, str]:
    try:
        with open(env_file, encoding="utf-8") as handle:
            extra = json.load(handle)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(env_file)
    if not isinstance(extra, dict):
        raise ValueError("the environment file is not a JSON object")
    return {str(key): str(value) for key, value in extra.items()}


def main(argv: list[str]) -> int:
    """Wait, load the environment, exec; a one-line error and 127 when that fails."""
    if len(argv) < 3:
        print("pane_launcher: usage: <gate file> <env file> <command> [args…]", file=sys.stderr)
        return EXIT_LAUNCH_FAILED
    gate, env_file, command = argv[0], argv[1], argv[2:]
    _wait_for_gate(gate)
    try:
        environment = {**os.environ, **_read_environment(env_file)}
    except (OSError, ValueError) as error:
        print(f"baton: cannot read the pane environment: {error}", file=sys.stderr)
        return EXIT_LAUNCH_FAILED
    try:
        os.execvpe(command[0], command, environment)
    except OSError as error:
        print(f"baton: cannot start {command[0]!r}: {error.strerror}", file=sys.stderr)
    return EXIT_LAUNCH_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
