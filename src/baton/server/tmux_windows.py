"""New panes in Baton's tmux server: a window (and session) for a new terminal, or the
terminal's own pane started afresh, each behind the pane launcher's gate.

The pane runs `pane_launcher` first: it waits until the server has attached the pane log
(the gate file appears), takes the pane environment, directory and command from a
private file (never from a command line, which `ps` shows to every user, nor from
tmux's, where an argument ending in `;` ends the command), then execs the CLI. tmux
starts every pane in `/` and never sees the user's path (docs/server.md, "What tmux
never sees").
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from baton.errors import TmuxError
from baton.private import private_dir, private_file, write_private
from baton.providers.base import PANE_LOG
from baton.server import pane_launcher
from baton.server.tmux import DEFAULT_COLUMNS, DEFAULT_ROWS, PLAIN_NAME, TmuxServer
from baton.server.tmux_panes import PaneInfo, PaneRef, WindowRef

__all__ = ["PaneLaunch", "create_window", "respawn_pane"]

_LAUNCHER = Path(pane_launcher.__file__)
# Variables describing the calling terminal or tmux client; a pane must not inherit them.
_ENV_SKIP = frozenset({"TMUX", "TMUX_PANE", "COLUMNS", "LINES"})
# Where tmux starts every pane: a path of Baton's, never the user's (see above).
_START_DIRECTORY = "/"


@dataclass(frozen=True)
class PaneLaunch:
    """What a pane runs: the command with its environment and directory, the text the
    launcher prints first, and the terminal's runtime directory (its pane log and gate)."""

    argv: Sequence[str]
    env: Mapping[str, str]
    working_directory: Path
    runtime_dir: Path
    preface: str = ""

    @property
    def pane_log(self) -> Path:
        return self.runtime_dir / PANE_LOG

    @property
    def gate_file(self) -> Path:
        return self.runtime_dir / ".launch-gate"


def create_window(
    tmux: TmuxServer,
    *,
    session: str,
    window_name: str,
    new_session: bool,
    terminal_id: str,
    launch: PaneLaunch,
) -> WindowRef:
    """Start `launch` in a new window (and session), its raw output piped to its pane log.

    The command is executed directly (no shell stays around it), with its env added to
    its environment, in its working directory, after the launcher printed its preface.
    The env, the directory and the preface go through a 0600 file next to the gate file,
    read and deleted by the pane's launcher; tmux starts the pane in `/` and never
    sees the path. The new pane is bound to `terminal_id` before its command starts, and
    only while it still runs the process it was made with: a new tmux server that reused
    the pane's id in between (this one died) holds another process, and is not bound.
    """
    for label, name in (("session", session), ("window", window_name)):
        if not PLAIN_NAME.fullmatch(name):
            raise TmuxError(f"tmux {label} name {name!r} is not plain (letters, digits, _ . -)")
    if not PaneRef(pane_id="%0", terminal_id=terminal_id).valid():
        raise TmuxError(f"terminal id {terminal_id!r} is not plain")
    env_file, gated = _gated_command(launch, tmux.pane_nice)
    if new_session:
        head = [
            "new-session",
            "-d",
            "-s",
            session,
            "-n",
            window_name,
            "-x",
            str(DEFAULT_COLUMNS),
            "-y",
            str(DEFAULT_ROWS),
        ]
    else:
        head = ["new-window", "-d", "-t", f"={session}:", "-n", window_name]
    try:
        output = tmux.run(
            *head,
            "-P",
            "-F",
            "#{window_id} #{pane_id} #{pane_pid} #{pane_width} #{pane_height}",
            "-c",
            _START_DIRECTORY,
            "--",
            *gated,
        )
        window_id, pane_id, pid, width, height = output.split()
        ref = PaneRef(pane_id=pane_id, terminal_id=terminal_id)
        tmux.bind_new_pane(ref, int(pid))
    except BaseException:
        env_file.unlink(missing_ok=True)
        raise
    _attach_log_and_open_gate(tmux, ref, launch)
    made = PaneInfo(pane_id, False, int(pid), None, int(width), int(height), terminal_id)
    return WindowRef(window_id=window_id, pane_id=pane_id, pane=made)


def respawn_pane(
    tmux: TmuxServer,
    pane: PaneRef,
    launch: PaneLaunch,
) -> None:
    """Start `launch` afresh in the terminal's own pane (its old command killed), as
    `create_window` starts one: env and directory through the launcher's private file,
    the log re-attached. TerminalExitedError when the pane is not the terminal's."""
    launch.gate_file.unlink(missing_ok=True)
    env_file, gated = _gated_command(launch, tmux.pane_nice)
    try:
        tmux.run_bound(
            pane,
            ["respawn-pane", "-k", "-t", pane.pane_id, "-c", _START_DIRECTORY, "--", *gated],
            # The old pipe may have died with the old command: close it (attached afresh below).
            ["pipe-pane", "-t", pane.pane_id],
        )
    except BaseException:
        env_file.unlink(missing_ok=True)
        raise
    _attach_log_and_open_gate(tmux, pane, launch)


def _gated_command(launch: PaneLaunch, nice: int) -> tuple[Path, list[str]]:
    """The launcher command line for `launch`, and the 0600 file that carries its command,
    env, working directory, preface and priority (`nice` steps below the server's) to it
    (tmux sees only Baton's own paths)."""
    gate_file = launch.gate_file
    env_file = gate_file.with_name(gate_file.name + ".env")
    private_dir(env_file.parent)
    pane_env = {
        key: value
        for key, value in launch.env.items()
        if key and key not in _ENV_SKIP and "=" not in key and "\0" not in key + value
    }
    document: dict[str, object] = {
        "environment": pane_env,
        "directory": str(launch.working_directory),
        "argv": list(launch.argv),
        "preface": launch.preface,
        "nice": nice,
    }
    write_private(env_file, pane_launcher.encode_launch(document))
    gated = [sys.executable, "-I", "-S", str(_LAUNCHER), str(gate_file), str(env_file)]
    return env_file, gated


def _attach_log_and_open_gate(tmux: TmuxServer, pane: PaneRef, launch: PaneLaunch) -> None:
    """Pipe the pane's output to `pane_log`, then let the launcher start the command.

    pipe-pane expands formats in its command: the quoted path has every `#` doubled,
    the one character tmux formats give a meaning to there.
    """
    pane_log, gate_file = launch.pane_log, launch.gate_file
    try:
        private_dir(pane_log.parent)
        private_file(pane_log)
        # `exec`: the shell tmux runs the command with becomes `cat`, one process a pane.
        command = "exec cat >> " + shlex.quote(str(pane_log)).replace("#", "##")
        tmux.run_bound(pane, ["pipe-pane", "-o", "-t", pane.pane_id, command])
    finally:
        private_dir(gate_file.parent)
        private_file(gate_file)
