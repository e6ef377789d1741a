"""The first program of every pane: wait for the pane log, take the environment, exec the CLI.

    python -I -S pane_launcher.py <gate file> <env file>

The pane's environment (API keys included), working directory and command travel in
`<env file>`, a dict `{"environment": {…}, "directory": "…", "argv": […], "preface": "…",
"nice": N}` in the terminal's private runtime directory (0600), never on
a command line where `ps` would show the environment to every user, nor to tmux, which would
expand `#(…)` and `#{…}` in a directory name and read an argument ending in `;` as the
end of its command (the rest of the command line as another tmux command). The launcher
waits until the server has attached the pane log (the gate file appears), so the log
misses nothing; reads and deletes the env file; changes into the directory; prints the
preface (text the server made safe to print, such as the skill catalog the agent was
given), if any; lowers the pane's CPU priority by `nice` steps (below); then replaces
itself with the command, so no launcher stays behind.

The priority: under load the agents (and the tests they run) wait for a core after the
server and the loops that read it, so a status read or a handoff does not queue behind
them. tmux starts each pane as a session of its own, and where the kernel schedules
each session as one group (autogroup) a process's nice value only ranks it within its
group: so the group's nice value is set too.

Standard library only and run by path with `-S`: it starts in a few milliseconds and
works whatever the pane's Python path is. The file is in `marshal`'s format, not JSON:
`json` would pull in `re` and `enum` (8 ms more of a start measured at 28), in every
pane; the server writes it (`encode_launch`) with the very interpreter the launcher runs
on, minutes at most before it is read, into a directory only it and its panes can open.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import time

GATE_WAIT_SECONDS = 10.0
MAX_NICE = 19
_POLL_SECONDS = 0.02
EXIT_LAUNCH_FAILED = 127
_AUTOGROUP = "/proc/self/autogroup"


def _wait_for_gate(gate: str) -> None:
    deadline = time.monotonic() + GATE_WAIT_SECONDS
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    with contextlib.suppress(OSError):
        os.unlink(gate)


def encode_launch(launch: dict[str, object]) -> bytes:
    """The env file's bytes for `launch` (what `_read_launch` reads back)."""
    return marshal.dumps(launch)


def _read_launch(env_file: str) -> tuple[dict[str, str], str, list[str], str, int]:
    """The extra environment, working directory, command, preface and priority the
    server wrote."""
    try:
        with open(env_file, "rb") as handle:
            launch = marshal.load(handle)
    except (EOFError, TypeError) as error:
        raise ValueError(f"the environment file is unreadable: {error}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(env_file)
    if not isinstance(launch, dict):
        raise ValueError("the environment file does not hold a launch")
    extra, directory, command = (
        launch.get("environment"),
        launch.get("directory"),
        launch.get("argv"),
    )
    if not isinstance(extra, dict) or not isinstance(directory, str) or not directory:
        raise ValueError("the environment file has no environment or directory")
    if not isinstance(command, list) or not command:
        raise ValueError("the environment file has no command")
    nice = launch.get("nice", 0)
    if not isinstance(nice, int) or not 0 <= nice <= MAX_NICE:
        raise ValueError(f"the environment file's nice value is not 0-{MAX_NICE}: {nice!r}")
    environment = {str(key): str(value) for key, value in extra.items()}
    preface = str(launch.get("preface") or "")
    return environment, directory, [str(word) for word in command], preface, nice


def lower_priority(steps: int) -> None:
    """Run this process, what it starts, and its session's scheduling group `steps` nice
    values below where it is (best effort: a kernel without autogroup has no group)."""
    if steps <= 0:
        return
    try:
        niceness = os.nice(steps)
    except OSError:
        return
    if os.getsid(0) != os.getpid():  # not a session of its own: the group is not the pane's
        return
    with contextlib.suppress(OSError), open(_AUTOGROUP, "w", encoding="ascii") as group:
        group.write(str(niceness))


def main(argv: list[str]) -> int:
    """Wait, load the environment, exec; a one-line error and 127 when that fails."""
    if len(argv) != 2:
        print("pane_launcher: usage: <gate file> <env file>", file=sys.stderr)
        return EXIT_LAUNCH_FAILED
    gate, env_file = argv
    _wait_for_gate(gate)
    try:
        extra, directory, command, preface, nice = _read_launch(env_file)
    except (OSError, ValueError) as error:
        print(f"baton: cannot read the pane environment: {error}", file=sys.stderr)
        return EXIT_LAUNCH_FAILED
    try:
        os.chdir(directory)
    except OSError as error:
        print(f"baton: cannot enter {directory!r}: {error.strerror}", file=sys.stderr)
        return EXIT_LAUNCH_FAILED
    environment = {**os.environ, **extra, "PWD": directory}
    if preface:  # UTF-8 whatever the pane's locale; the terminal turns \n into a new line
        sys.stdout.buffer.write(preface.encode("utf-8", "replace"))
        sys.stdout.flush()
    lower_priority(nice)
    try:
        os.execvpe(command[0], command, environment)
    except OSError as error:
        print(f"baton: cannot start {command[0]!r}: {error.strerror}", file=sys.stderr)
    return EXIT_LAUNCH_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
